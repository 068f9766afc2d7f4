"""Teleoperation: a leader arm read as joint angles (``leader``), end-effector targets streamed from Python and
one frame of them solved (``tooltarget``), and the follower's checks and pacing of the angles it is sent
(``follow``). The Robot's thread that plays them is ``armctl.robot.followplay``."""
