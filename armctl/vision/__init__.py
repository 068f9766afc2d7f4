"""Cameras that see the arm: camera sources by name (``sources``), the simulated camera (``simcam``), ChArUco
boards and camera intrinsics, ArUco markers, and the fits that calibrate an arm from what a camera sees."""
