"""The simulators: our board (``board``), the simulated arm (``armsim``), a Feetech servo bus (``feetechsim``),
the PCA9685 chip (``pca9685_sim``), the pyserial URL handlers over them (``protocol_armsim``,
``protocol_feetechsim``) and the pty server (``pty``). They may use the bus (host side) and the arm model;
nothing in ``armctl.bus`` imports them (the URL schemes are looked up in ``armctl.bus.simulators``)."""
