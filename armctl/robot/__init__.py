"""``armctl.connect`` and the ``Robot`` (``robot``) over collaborators with one job each: ``opening`` (arm, port,
backend and calibration resolved), ``runner`` (one thread owns the board), ``stream`` (a trajectory played at
its timestamps), ``runcontrol`` (hold, speed, stop), ``pose`` (where the arm is), ``journal`` and ``state`` (the
state folder), ``restart`` (resume a program), ``handles`` (``Motion``, ``MoveResult``), ``lifecycle``,
``interrupts``, ``boardaccess``, ``followplay`` (teleoperation played), ``watch`` (an arm another process
drives). ``from armctl.robot import connect, Robot`` still works."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.robot.robot")
