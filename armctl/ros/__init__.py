"""armctl on a ROS 2 graph: ``armctl ros`` (``armctl.cli.ros``) runs ``armctl.ros.node.ArmNode`` over one open Robot.

The node's commands are played one at a time by ``armctl.ros.worker.Worker``; ``armctl.ros.commands`` is the
joint_commands topic as the leader ``Robot.follow`` reads. ``armctl.ros.messages`` checks what comes in
(trajectories, joint commands, tool goals) with no rclpy; the node imports rclpy and the message packages only when
it runs (``pip install 'armctl[ros]'``, or a ROS 2 install).
"""
