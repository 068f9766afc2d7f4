"""The physics plant behind the simulators (MuJoCo, ``armctl[physics]``): the scene file, the world built from
armctl's own arm model, and what the simulators ask of it."""
