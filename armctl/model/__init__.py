"""The arm model: forward kinematics and the one closed-form 2-link solve (``kinematics``), keep-out zones as
capsules against boxes and planes (``zones``, ``capsule``), the maker's URDF (``urdf``: ``parse`` reads it,
``derive`` turns it into an arm), the ``Arm`` itself, loaded from a preset or a URDF (``arm``), reachability and
the refusals it gives (``workspace``), and edge validation of numbers, angles, speeds and points
(``validate``), which the CLI, the web API and the Python API share."""
