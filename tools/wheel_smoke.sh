#!/usr/bin/env bash
# Installed like any package, armctl works anywhere: build a wheel, install it in a fresh virtualenv,
# and from an empty directory (a fresh HOME, no ARMCTL_* variables) jog the simulated arm, run a
# program, check the calibration square and drive the arm from Python. Run by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- building the wheel"
"$py" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$root"
wheel=$(ls "$work"/dist/armctl-*.whl)
echo "-- installing $(basename "$wheel") in a fresh virtualenv"
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"

mkdir -p "$work/empty" "$work/home"
cp "$root/examples/pick_and_place.yaml" "$root/examples/pick_and_place.py" "$work/empty/"
cd "$work/empty"
unset ARMCTL_STATE_DIR ARMCTL_CONFIG_DIR XDG_STATE_HOME XDG_CONFIG_HOME XDG_CACHE_HOME PYTHONPATH
export HOME="$work/home"
armctl="$work/venv/bin/armctl"

echo "-- armctl jog, from $(pwd)"
"$armctl" jog 0.5 0.2 --speed 300
echo "-- armctl run"
"$armctl" run pick_and_place.yaml
echo "-- armctl calibrate --check"
"$armctl" calibrate --check --speed 300
echo "-- the Python API"
"$work/venv/bin/python" - <<'PY'
import armctl, pathlib
with armctl.connect("seed-3link") as robot:
    robot.move_to(0.5, 0.1, speed=0.3)
    pose = robot.where(settle=True)
    assert abs(pose.tool_m[0] - 0.5) < 1e-3 and abs(pose.tool_m[1] - 0.1) < 1e-3, pose
    assert pathlib.Path(armctl.__file__).is_relative_to(pathlib.Path.cwd().parent / "venv"), armctl.__file__
print("python api:", pose)
import armctl.ik, armctl.arm, armctl.model.arm
assert armctl.ik.kernel.core is not None, "the C kernel (armctl.ik._core) is not in the wheel"
assert armctl.arm is armctl.model.arm, (armctl.arm, armctl.model.arm)  # a path from before 0.3: the same module
assert armctl.model.arm.__spec__.name == "armctl.model.arm" and armctl.arm.load_arm("mearm").has_base
print("C kernel:", armctl.ik.kernel.core.__file__)
PY
echo "-- again with what Windows lacks taken away (tests/nonposix/sitecustomize.py)"
ARMCTL_TEST_NO_POSIX=1 PYTHONPATH="$root/tests/nonposix" "$armctl" jog 0.4 0.2 --speed 300
ARMCTL_TEST_NO_POSIX=1 PYTHONPATH="$root/tests/nonposix" "$armctl" status
ARMCTL_TEST_NO_POSIX=1 PYTHONPATH="$root/tests/nonposix" "$work/venv/bin/python" -c "
import armctl, signal
assert not hasattr(signal, 'SIGHUP')
with armctl.connect('seed-3link') as robot:
    robot.move_to(0.45, 0.15, speed=0.3)
    print('python api without POSIX:', robot.where(settle=True))
"
test -d "$HOME/.local/state/armctl" || { echo "no state in ~/.local/state/armctl" >&2; exit 1; }
if [ -e calibration ] || [ -n "$(ls -A "$work/empty" | grep -v '^pick_and_place')" ]; then
    echo "armctl wrote into the working directory:" >&2; ls -la "$work/empty" >&2; exit 1
fi
echo "-- wheel install OK"
