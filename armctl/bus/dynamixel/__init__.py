"""ROBOTIS Dynamixel bus servos (X series, Protocol 2.0): the protocol's constants, control tables and packets
(``protocol``)."""
