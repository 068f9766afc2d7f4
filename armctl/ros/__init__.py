"""armctl on a ROS 2 graph: ``armctl ros`` (``armctl.cli.ros``) runs ``armctl.ros.node.ArmNode`` over one open Robot.

``armctl.ros.messages`` checks what comes in (trajectories, joint commands, tool goals) with no rclpy; the node
imports rclpy and the message packages only when it runs (``pip install 'armctl[ros]'``, or a ROS 2 install).
"""
