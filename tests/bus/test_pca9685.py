"""PCA9685 boards (issue 27): the chip's arithmetic, the simulated chip that refuses what the datasheet
forbids, the backend through the Robot and the CLI, and Adafruit's own CircuitPython driver run against the
same chip model as the outside reference for the register values."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import armctl
from armctl.bus import pca9685_chip as hw
from armctl.bus.pca9685.i2c import I2CNack, parse_addresses
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.sim.pca9685_sim import BlinkaBus, Chip, DatasheetViolation, SimI2CBus, parse_url
from tests.helpers import require

# --- the chip's arithmetic ---------------------------------------------------------------------------------


def test_prescale_and_counts_match_the_datasheet():
    assert hw.prescale_for(50) == 121  # 25 MHz / (4096 * 50) - 1, rounded
    assert hw.prescale_for(1526) == 3 and hw.prescale_for(24) == 253
    with pytest.raises(ValueError, match="outside what the chip makes"):
        hw.prescale_for(10)
    assert hw.count_us(121) == pytest.approx(4.88, abs=0.001)
    assert hw.counts_for_us(1500, 121) == 307
    assert hw.period_us(121) == pytest.approx(19988.5, abs=0.1)


def test_channel_registers_round_trip():
    for counts in (1, 307, 4095):
        assert hw.decode_channel(hw.channel_bytes(counts))[2] == counts
    assert hw.decode_channel(hw.channel_bytes(None))[2] is None
    assert hw.decode_channel(bytes((0, 0x10, 0, 0)))[2] == 4096  # full on
    with pytest.raises(ValueError):
        hw.channel_bytes(4096)


def test_identify_tells_a_pca9685_from_other_devices():
    assert hw.identify(bytes((0x11, 0x04, 0xE2, 0xE4, 0xE8, 0xE0))) is None  # power-on values
    assert "MODE2" in hw.identify(bytes((0x11, 0xE4, 0xE2, 0xE4, 0xE8, 0xE0)))
    assert "bit 0" in hw.identify(bytes((0x11, 0x04, 0xE3, 0xE4, 0xE8, 0xE0)))
    assert "everywhere" in hw.identify(bytes([0xFF] * 6))
    # registers 0-5 that read like mode registers: a PRE_SCALE below 3 (the chip forces 3) gives it away
    assert "PRE_SCALE reads 0" in hw.identify(bytes((0x39, 0x00, 0x00, 0x00, 0x00, 0x00)), 0)
    assert hw.identify(bytes((0x21, 0x04, 0xE2, 0xE4, 0xE8, 0xE0)), 121) is None


def test_addresses_parse():
    assert parse_addresses("0x40,0x41") == [0x40, 0x41]
    assert parse_addresses("64") == [0x40]
    for bad in ("0x80", "0x40,0x40", "", "x"):
        with pytest.raises(ValueError):
            parse_addresses(bad)


# --- the simulated chip ------------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_chip_powers_on_asleep_with_every_output_off():
    chip = Chip(0x40)
    assert chip.regs[hw.MODE1] == 0x11 and chip.prescale == 30
    assert all(chip.width_us(ch) is None for ch in range(16))
    assert chip.stop() == []


def test_chip_refuses_prescale_while_awake_and_restart_too_early():
    clock = Clock()
    chip = Chip(0x40, clock=clock)
    chip.write(bytes((hw.MODE1, 0x00)))  # wake
    with pytest.raises(DatasheetViolation, match="PRE_SCALE written"):
        chip.write(bytes((hw.PRE_SCALE, 121)))
    assert chip.prescale == 30  # ignored, as the real chip does
    chip.write(bytes((hw.MODE1, hw.SLEEP)))
    chip.write(bytes((hw.PRE_SCALE, 121)))
    assert chip.prescale == 121
    chip.write(bytes((hw.MODE1, 0x00)))
    clock.t += 100e-6
    with pytest.raises(DatasheetViolation, match="500 us"):
        chip.write(bytes((hw.MODE1, hw.RESTART)))
    with pytest.raises(I2CNack):
        chip.write(bytes((0x50, 1)))  # reserved register: not acknowledged
    with pytest.raises(DatasheetViolation, match="TestMode"):
        chip.write(bytes((hw.TEST_MODE, 1)))


def test_chip_auto_increment_wraps_and_all_led_fans_out():
    chip = Chip(0x40, strict=False)
    chip.write(bytes((hw.MODE1, 0x00)))
    # AI off: every byte lands in the same register
    chip.write(bytes((hw.channel_reg(0), 1, 2, 3)))
    assert list(chip.regs[6:10]) == [3, 0, 0, 0x10]
    chip.write(bytes((hw.MODE1, hw.AI)))
    chip.write(bytes((hw.LAST_LED_REG, 0x01, 0x21)))  # LED15_OFF_H, then wraps to MODE1
    assert chip.regs[hw.LAST_LED_REG] == 0x01 and chip.regs[hw.MODE1] == 0x21
    chip.write(bytes((hw.ALL_LED, 0, 0, 0x33, 0x01)))
    chip.stop()
    assert all(chip.width_us(ch) == pytest.approx(307 * hw.count_us(30)) for ch in range(16))


def test_sleeping_with_outputs_sets_restart_and_outputs_stop_until_it():
    clock = Clock()
    bus = SimI2CBus(parse_url("pca9685sim://"), clock=clock)
    bus.write(0x40, bytes((hw.MODE1, hw.AI)))
    clock.t += 0.001
    bus.write(0x40, bytes((hw.channel_reg(2), 0, 0, 0x33, 0x01)))
    assert bus.chips[0x40].outputs[2] is not None
    bus.write(0x40, bytes((hw.MODE1, hw.AI | hw.SLEEP)))
    assert bus.chips[0x40].outputs[2] is None and bus.chips[0x40].regs[hw.MODE1] & hw.RESTART
    bus.write(0x40, bytes((hw.MODE1, hw.AI)))
    assert bus.chips[0x40].outputs[2] is None  # still stopped: RESTART is pending
    clock.t += 0.001
    bus.write(0x40, bytes((hw.MODE1, hw.AI | hw.RESTART)))
    assert bus.chips[0x40].outputs[2] == pytest.approx(307 * hw.count_us(30))
    assert not bus.chips[0x40].regs[hw.MODE1] & hw.RESTART


def test_sim_url_options_are_checked():
    assert parse_url("pca9685sim://?address=0x40,0x41&chip_osc_hz=24e6").addresses == [0x40, 0x41]
    for bad in ("pca9685sim://?bogus=1", "pca9685sim://?osc_hz=3", "pca9685sim://host", "pca9685sim://?strict=2"):
        with pytest.raises(ValueError, match="expected a URL like"):
            parse_url(bad)


# --- Adafruit's driver against the same chip model (the outside reference) --------------------------------


def _servokit(bus):
    try:
        from adafruit_servokit import ServoKit
    except ImportError as exc:
        require(False, f"Adafruit's CircuitPython ServoKit is not installed (test extra): {exc}")
    except NotImplementedError:  # its `import board`: Blinka knows no board on a Windows or macOS PC
        pytest.skip(f"Adafruit Blinka supports no board on {sys.platform} (its driver is checked on Linux)")
    return ServoKit(channels=16, i2c=BlinkaBus(bus))


def _cal(channel_ranges):
    from armctl.calibration.servo import Calibration, ServoCal

    joints = tuple(
        ServoCal(f"j{ch}", ch, ch, (lo + hi) / 2, (hi - lo) / 180, 1, lo, hi) for ch, (lo, hi) in channel_ranges.items()
    )
    return Calibration(arm="test", joints=joints)


def test_armctl_writes_the_prescale_and_counts_adafruits_driver_writes():
    from armctl.bus.pca9685.backend import PCA9685Backend

    ranges = {0: (500.0, 2500.0), 3: (750.0, 2250.0), 15: (544.0, 2400.0)}
    cal = _cal(ranges)  # each servo's 0..180 deg is joint angle -90..90 deg, lo..hi us
    servo = {s.channel: s for s in cal.servos}
    ours = PCA9685Backend.create("pca9685sim://", cal)
    ours.open()
    theirs_bus = SimI2CBus(parse_url("pca9685sim://"))
    kit = _servokit(theirs_bus)  # strict model: its init sequence must follow the datasheet too
    for ch, (lo, hi) in ranges.items():
        kit.servo[ch].set_pulse_width_range(lo, hi)
    ours_chip = ours.i2c.bus.chips[0x40]
    theirs_chip = theirs_bus.chips[0x40]
    assert ours_chip.prescale == theirs_chip.prescale == 121
    worst = 0
    for angle in range(0, 181, 5):
        for ch in ranges:
            kit.servo[ch].angle = angle
            ours.set_outputs({ch: float(servo[ch].value(math.radians(angle - 90)))})  # armctl's calibration
            base = hw.channel_reg(ch)
            a = hw.decode_channel(bytes(ours_chip.regs[base : base + 4]))[2]
            b = hw.decode_channel(bytes(theirs_chip.regs[base : base + 4]))[2]
            worst = max(worst, abs(a - b))
    print(f"largest difference from Adafruit's ServoKit over 37 angles x 3 ranges: {worst:g} counts")
    assert worst <= 1
    assert ours_chip.violations == [] and theirs_chip.violations == []
    ours.close()


# --- the backend through the Robot ---------------------------------------------------------------------------


def _log(bus) -> dict[int, list[tuple[float, float | None]]]:
    out: dict[int, list] = {}
    for t, _, ch, w in bus.log:
        out.setdefault(ch, []).append((t, w))
    return out


def test_first_pulse_is_the_one_armctl_writes_and_no_step_beats_the_speed_limit(tmp_path):
    state = tmp_path / "chip.json"
    url = f"pca9685sim://?state={state}"
    with armctl.connect("seed-3link", port=url, backend="pca9685", assume_pose="home") as robot:
        bus = robot.backend.i2c.bus
        assert not bus.log  # nothing output before the first move
        robot.move_to(0.5, 0.2, speed=0.3)
        robot.move_to(0.45, -0.1, speed=0.3)
        robot.home()
        pose = robot.where()
        cal = robot.calibration
        arm = robot.arm
    assert pose.source == "commanded"
    log = _log(bus)
    count = hw.count_us(121)
    for i, servo in enumerate(cal.servos):
        widths = [w for _, w in log[servo.channel]]
        assert None not in widths
        limit = arm.gripper.max_speed_rad_s if i == arm.n else arm.max_speed_rad_s[i]
        steps = np.abs(np.diff(widths)) if len(widths) > 1 else np.zeros(1)
        worst_deg_s = math.radians(float(steps.max()) / servo.per_deg) / 0.020
        # one 20 ms frame at the speed limit, plus one count of rounding on each end
        assert float(steps.max()) <= math.degrees(limit) * 0.020 * servo.per_deg + 2 * count, (servo.name, worst_deg_s)
    home = [float(cal.servos[i].value(q)) for i, q in enumerate(arm.home_rad)]
    final = [log[s.channel][-1][1] for s in cal.joints]
    assert np.allclose(final, home, atol=count)


def test_a_restarted_host_reads_the_pulses_back_and_does_not_interrupt_them(tmp_path):
    state = tmp_path / "chip.json"
    url = f"pca9685sim://?state={state}"
    with armctl.connect("seed-3link", port=url, backend="pca9685", assume_pose="home") as robot:
        robot.move_to(0.5, 0.2, speed=0.3)
        before = robot.board_status().values
    with armctl.connect("seed-3link", port=url, backend="pca9685") as robot:
        chip = robot.backend.i2c.bus.chips[0x40]
        assert not any(data[0] == hw.MODE1 and len(data) > 1 and data[1] & hw.SLEEP for _, data in chip.writes)
        assert not any(data[0] == hw.PRE_SCALE and len(data) > 1 for _, data in chip.writes)
        after = robot.board_status()
        pose = robot.where()
        assert after.counters["pca9685"]["0x40"]["prescale"] == 121
    assert pose.source == "commanded" and pose.tool_m[0] == pytest.approx(0.5, abs=0.003)
    assert all(a == pytest.approx(b, abs=hw.count_us(121)) for a, b in zip(after.values[:4], before[:4]))


def test_a_wrong_oscillator_trim_shows_in_the_pulses(tmp_path):
    # the board's oscillator runs at 24 MHz; the host, untrimmed, believes 25: every pulse is 4 % long
    log = tmp_path / "log.csv"
    url = f"pca9685sim://?chip_osc_hz=24000000&log={log}"
    with armctl.connect("seed-3link", port=url, backend="pca9685", assume_pose="home") as robot:
        robot.home()
        wanted = robot.board_status().values[0]
    rows = [r.split(",") for r in log.read_text().splitlines()]
    measured = [float(r[3]) for r in rows if r[2] == "0" and r[3]][-1]
    assert measured == pytest.approx(wanted * 25 / 24, abs=hw.count_us(121))
    trimmed = tmp_path / "trimmed.csv"
    url = f"pca9685sim://?chip_osc_hz=24000000&osc_hz=24000000&log={trimmed}"
    with armctl.connect("seed-3link", port=url, backend="pca9685", assume_pose="home") as robot:
        robot.home()
    rows = [r.split(",") for r in trimmed.read_text().splitlines()]
    assert float([r[3] for r in rows if r[2] == "0" and r[3]][-1]) == pytest.approx(wanted, abs=hw.count_us(121))


# --- the command line: bad input, status, ports --------------------------------------------------------------


def _armctl(*args, env=None):
    return subprocess.run([sys.executable, "-m", "armctl", *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(
    ("port", "code", "words"),
    [
        ("i2c:///dev/i2c-97", 4, "no I2C bus /dev/i2c-97"),
        ("pca9685sim://?chips=0x41", 4, "no device answers at I2C address 0x40"),
        ("pca9685sim://?chips=0x41&other=0x40", 4, "is no PCA9685"),
        ("i2c:///dev/i2c-1?address=0x20", 2, "no PCA9685 address"),
        ("i2c:///dev/i2c-1?bogus=1", 2, "unknown option"),
        ("i2c://dev/i2c-1?address=0x40", 2, "after three slashes (i2c:///dev/i2c-1)"),
        ("/dev/i2c-1", 2, "give it as --port 'i2c:///dev/i2c-1?address=0x40'"),
        ("pca9685sim://?osc=1", 2, "unknown pca9685sim option"),
    ],
)
def test_bad_buses_and_addresses_get_one_line(port, code, words):
    r = _armctl("--backend", "pca9685", "--port", port, "jog", "0.5", "0.2")
    assert r.returncode == code, r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="Linux i2c-dev (smbus2 needs fcntl)")
def test_permission_denied_names_the_group(monkeypatch, tmp_path):
    import smbus2

    from armctl.bus.pca9685.i2c import LinuxI2C
    from armctl.errors import LinkError

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(smbus2, "SMBus", refuse)
    device = tmp_path / "i2c-1"  # a bus device that exists (/dev/i2c-1 here would not)
    device.touch()
    with pytest.raises(LinkError, match="group i2c"):
        LinuxI2C(str(device))


def test_a_pulse_the_chip_cannot_make_is_refused_before_anything_is_written(tmp_path):
    from armctl.core.paths import PRESET_CALIBRATION_DIR

    cal = tmp_path / "fast.yaml"
    text = (PRESET_CALIBRATION_DIR / "seed-3link.yaml").read_text()
    cal.write_text(text.replace("arm: seed-3link", "arm: seed-3link\npwm_hz: 450"))
    log = tmp_path / "log.csv"
    r = _armctl("--calibration", str(cal), "--port", f"pca9685sim://?log={log}", "jog", "0.5", "0.2")
    assert r.returncode == 2, r.stderr
    assert "outside the" in r.stderr and "at 450 Hz" in r.stderr
    assert not log.exists() or log.read_text() == ""


def test_status_json_gives_prescale_and_counts_and_ports_finds_the_chip(tmp_path):
    url = f"pca9685sim://?state={tmp_path / 'chip.json'}"
    assert _armctl("--port", url, "--assume-pose", "home", "jog", "0.5", "0.2", "--speed", "300").returncode == 0
    r = _armctl("--port", url, "status", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    chip = st["counters"]["pca9685"]["0x40"]
    assert st["backend"] == "pca9685" and st["source"] == "commanded" and chip["prescale"] == 121
    assert chip["outputs"][0]["off"] == hw.counts_for_us(st["widths_us"][0], 121)
    assert st["tool_m"] == pytest.approx([0.5, 0.2], abs=0.003)
    r = _armctl("ports", "pca9685sim://?osc_hz=24000000")  # the frequency at the URL's oscillator trim
    assert "0x40 PCA9685, 189.0 Hz (prescale 30)" in r.stdout, r.stdout
    r = _armctl("ports", "--json", "pca9685sim://?address=0x40,0x41&other=0x68")
    (found,) = json.loads(r.stdout)
    assert found["found"] == "pca9685" and found["backend"] == "pca9685"
    assert "address=0x40,0x41" in found["port"] and "0x68 a device that is no PCA9685" in found["detail"]


def test_a_chip_left_at_another_period_keeps_its_pulse_widths_when_armctl_changes_it(tmp_path):
    # another program (or a calibration with pwm_hz 60, as Adafruit's tutorials use) left the chip awake at
    # 60 Hz holding the servos: at 50 Hz the same counts are 20 % longer pulses, a jump of every servo;
    # armctl rewrites them, in SLEEP, to the same widths in its counts
    from armctl.core.paths import PRESET_CALIBRATION_DIR

    cal60 = tmp_path / "cal60.yaml"
    text = (PRESET_CALIBRATION_DIR / "seed-3link.yaml").read_text()
    cal60.write_text(text.replace("arm: seed-3link", "arm: seed-3link\npwm_hz: 60"))
    log = tmp_path / "log.csv"
    url = f"pca9685sim://?state={tmp_path / 'chip.json'}&log={log}"
    with armctl.connect("seed-3link", port=url, backend="pca9685", assume_pose="home", calibration=cal60) as robot:
        robot.move_to(0.5, 0.2, speed=0.3)
        held = robot.board_status().values
        assert robot.board_status().counters["pca9685"]["0x40"]["prescale"] == hw.prescale_for(60)
    before = len(log.read_text().splitlines())
    with armctl.connect("seed-3link", port=url, backend="pca9685") as robot:
        chip = robot.backend.i2c.bus.chips[0x40]
        st = robot.board_status()
        pose = robot.where()
        assert chip.violations == []
    assert st.counters["pca9685"]["0x40"]["prescale"] == 121
    assert all(a == pytest.approx(b, abs=hw.count_us(121)) for a, b in zip(st.values[:4], held[:4]))
    # rounded twice (to 60 Hz counts, then 50 Hz ones): under a count on each joint of the 0.9 m arm, about
    # 10 mm at worst (docs/pca9685.md: 6.9 mm for half a count); a jump would be ~300 mm
    assert pose.tool_m[0] == pytest.approx(0.5, abs=0.01) and pose.tool_m[1] == pytest.approx(0.2, abs=0.01)
    # every pulse the chip gave since: the held width (to a count at 50 Hz), or none while it slept
    for row in log.read_text().splitlines()[before:]:
        _, _, ch, w = row.split(",")
        if w and int(ch) < 4:
            assert float(w) == pytest.approx(held[int(ch)], abs=hw.count_us(121)), row


def test_chip_reserved_bits_read_zero_and_the_pointer_wraps_past_testmode():
    chip = Chip(0x40, strict=False)
    chip.write(bytes((hw.MODE1, hw.AI)))
    chip.write(bytes((hw.MODE2, 0xFF)))
    chip.write(bytes((hw.channel_reg(1), 0xFF, 0xFF, 0xFF, 0xFF)))
    assert chip.regs[hw.MODE2] == 0x1F and list(chip.regs[10:14]) == [0xFF, 0x1F, 0xFF, 0x1F]
    chip.write(bytes((hw.TEST_MODE, 0, 0x31)))  # TestMode (recorded), then MODE1
    assert chip.regs[hw.MODE1] == 0x31 and chip.violations


def test_status_reads_a_board_the_calibration_does_not_use_without_auto_increment(tmp_path):
    # 0x41, named in the URL but not used by the calibration, is left as another program set it: awake,
    # auto-increment off, output 0 pulsing 307 counts; armctl neither starts it nor misreads its registers
    from armctl.bus.pca9685.backend import PCA9685Backend

    regs = [0] * 256
    regs[hw.MODE1], regs[hw.MODE2], regs[hw.PRE_SCALE] = 0x01, 0x04, 121
    regs[2:6] = [0xE2, 0xE4, 0xE8, 0xE0]
    for ch in range(16):
        regs[hw.channel_reg(ch) + 3] = hw.FULL_BIT
    regs[hw.channel_reg(0) : hw.channel_reg(0) + 4] = [0, 0, 0x33, 0x01]
    state = tmp_path / "chips.json"
    state.write_text(json.dumps({"chips": {"0x41": regs}}))
    be = PCA9685Backend(f"pca9685sim://?address=0x40,0x41&state={state}", ranges_us={0: (500.0, 2500.0)})
    info = be.open()
    outs = be.status().counters["pca9685"]["0x41"]["outputs"]
    assert outs[0] == {"channel": 16, "on": 0, "off": 307} and outs[1]["off"] == 0x1000
    assert info.values[16] == pytest.approx(307 * hw.count_us(121)) and info.values[17] is None
    assert not be.i2c.bus.chips[0x41].writes or all(len(d) == 1 for _, d in be.i2c.bus.chips[0x41].writes)
    be.close()


@pytest.mark.skipif(sys.platform == "win32", reason="Linux i2c-dev (smbus2 needs fcntl)")
def test_an_address_a_kernel_driver_owns_is_left_alone(monkeypatch, tmp_path):
    # i2c-dev's I2C_RDWR reaches any address; I2C_SLAVE says EBUSY where a kernel driver sits (i2cdetect: UU),
    # for instance the pwm-pca9685 driver of a dtoverlay on the board itself: not probed, not driven
    import errno
    import fcntl

    from armctl.bus.pca9685.backend import PCA9685Backend, scan
    from armctl.bus.pca9685.i2c import I2C_SLAVE, LinuxI2C
    from armctl.errors import LinkError

    touched = []

    class FakeSMBus:
        fd = 99

        def i2c_rdwr(self, *msgs):
            touched.append(msgs[0].addr)
            raise OSError(errno.ENXIO, "No such device or address")

        def close(self):
            pass

    def ioctl(fd, request, address):
        assert fd == 99 and request == I2C_SLAVE
        if address == 0x40:
            raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(fcntl, "ioctl", ioctl)
    import smbus2

    monkeypatch.setattr(smbus2, "SMBus", lambda device: FakeSMBus())
    device = tmp_path / "i2c-1"
    device.touch()
    bus = LinuxI2C(str(device))
    found = scan(bus)
    assert found == [(0x40, "in use by a kernel driver (UU; not probed)", False)]
    assert 0x40 not in touched and len(touched) == 63
    be = PCA9685Backend(f"i2c://{device}?address=0x40", ranges_us={0: (500.0, 2500.0)})
    touched.clear()
    with pytest.raises(LinkError, match="belongs to a kernel driver"):
        be.open()
    assert touched == []


def test_a_bare_i2c_device_as_port_is_told_the_url_not_opened_as_a_serial_port():
    r = _armctl("--port", "/dev/i2c-1", "status")
    assert r.returncode == 2 and "give it as --port 'i2c:///dev/i2c-1?address=0x40'" in r.stderr, r.stderr


def test_a_chip_put_to_sleep_holding_pulses_is_restarted_as_the_datasheet_says(tmp_path):
    # datasheet 7.3.1.1: RESTART set (sleeping with channels active): clear SLEEP, wait 500 us, write RESTART;
    # the strict model refuses a RESTART written too early or while asleep
    from armctl.bus.pca9685.backend import PCA9685Backend

    regs = [0] * 256
    regs[hw.MODE1] = hw.RESTART | hw.AI | hw.SLEEP | hw.ALLCALL
    regs[hw.MODE2], regs[hw.PRE_SCALE] = 0x04, 121
    regs[2:6] = [0xE2, 0xE4, 0xE8, 0xE0]
    for ch in range(16):
        regs[hw.channel_reg(ch) + 3] = hw.FULL_BIT
    regs[hw.channel_reg(0) : hw.channel_reg(0) + 4] = [0, 0, 0x33, 0x01]
    state = tmp_path / "chips.json"
    state.write_text(json.dumps({"chips": {"0x40": regs}}))
    be = PCA9685Backend(f"pca9685sim://?state={state}", ranges_us={0: (500.0, 2500.0)})
    info = be.open()
    chip = be.i2c.bus.chips[0x40]
    assert chip.violations == [] and not chip.regs[hw.MODE1] & (hw.RESTART | hw.SLEEP)
    assert chip.outputs[0] == pytest.approx(307 * hw.count_us(121)) == info.values[0]
    assert [d for _, d in chip.writes if d[0] == hw.MODE1 and len(d) > 1][-1][1] & hw.RESTART
    be.close()


def test_bad_boards_and_calibrations_get_no_register_written(monkeypatch):
    # nothing at the address, a device there that is no PCA9685, a pulse the chip cannot make at the period:
    # refused after reads only (a register pointer named for each read), no write transaction at all
    from armctl.bus.pca9685.backend import PCA9685Backend
    from armctl.errors import BadInputError, LinkError

    written = []
    write = SimI2CBus.write

    def record(self, address, data):
        written.append((address, bytes(data)))
        return write(self, address, data)

    monkeypatch.setattr(SimI2CBus, "write", record)
    cases = [
        ("pca9685sim://?chips=0x41", {0: (500.0, 2500.0)}, 50.0, LinkError),
        ("pca9685sim://?chips=0x41&other=0x40", {0: (500.0, 2500.0)}, 50.0, LinkError),
        ("pca9685sim://?address=0x40,0x41&chips=0x40", {0: (500.0, 2500.0)}, 50.0, LinkError),
        ("pca9685sim://", {0: (500.0, 2500.0)}, 450.0, BadInputError),
    ]
    for url, ranges, hz, error in cases:
        with pytest.raises(error):
            PCA9685Backend(url, ranges_us=ranges, pwm_hz=hz).open()
    assert written == []
    PCA9685Backend("pca9685sim://", ranges_us={0: (500.0, 2500.0)}).open()
    assert written  # the record sees a good board's start


# --- calibrating on a PCA9685: the chip's step, and ServoKit's pulse ranges (issue 33, item 9) --------------------


def _off_counts(chip, channel: int) -> int:
    base = hw.channel_reg(channel)
    return hw.decode_channel(bytes(chip.regs[base : base + 4]))[1]


def test_calibrate_nudges_a_pca9685_servo_one_chip_count_a_key(tmp_path):
    """The smallest nudge (k/j) used to be 0.5 us, a tenth of the chip's 4.88 us count: most key presses did
    nothing at all. It is now one count, asked of the backend (its prescale and oscillator)."""
    from armctl.calibration import procedures as cb
    from armctl.cli.calibrate_flow import STEPS_US, key_help

    url = f"pca9685sim://?state={tmp_path / 'chip.json'}"
    with armctl.connect(
        "mearm", port=url, backend="pca9685", calibration="mearm-pca9685", calibrating=True, assume_pose="home"
    ) as robot:
        count = hw.count_us(121)
        assert robot.backend.value_step(0) == pytest.approx(count) == pytest.approx(4.88)  # (121 + 1) / 25 MHz
        n = cb.Nudger(robot, robot.servo_values())
        robot.settle()
        chip = robot.backend.i2c.bus.chips[0x40]
        start = _off_counts(chip, 0)
        for _ in range(5):
            n.nudge(0, STEPS_US["k"])
            robot.settle()
        assert _off_counts(chip, 0) == start + 5  # each key press one count (main: 2.5 us, at most one)
        assert n.pulse(0) == pytest.approx((start + 5) * count)
        n.nudge(0, STEPS_US["J"])  # -10 us: two counts
        n.nudge(0, STEPS_US["["])  # -100 us: the nearest whole count, 20
        robot.settle()
        assert _off_counts(chip, 0) == start + 5 - 2 - 20
        assert "+/-4.88 us (one board step)" in key_help(n.step(0))[0]
    url = f"armsim://?arm=mearm&state={tmp_path / 'armsim.json'}"
    with armctl.connect("mearm", port=url, calibrating=True) as robot:  # our firmware: its 0.5 us ticks
        n = cb.Nudger(robot, robot.servo_values())
        before = n.pulse(0)
        assert n.step(0) == 0.5 and n.nudge(0, STEPS_US["k"]) == before + 0.5


PRESET_CALIBRATION = PRESET_CALIBRATION_DIR / "mearm-pca9685.yaml"
SERVOKIT_CASES = [  # (MIN_US, MAX_US, actuation_range, zero_at, reverse)
    (750, 2250, None, None, False),  # ServoKit's defaults
    (500, 2500, 270, 45, False),
    (600, 2400, 135, 100, True),
    (2400, 600, 180, 30, False),  # set_pulse_width_range(max, min): Adafruit's way to reverse a servo
]


@pytest.mark.parametrize(("lo", "hi", "rng", "zero_at", "reverse"), SERVOKIT_CASES)
def test_from_servokit_gives_the_pulses_adafruits_servokit_gives(tmp_path, capsys, lo, hi, rng, zero_at, reverse):
    """`calibrate --joint J --from-servokit MIN MAX` against Adafruit's own ServoKit on the same chip model: at
    every ServoKit angle the joint angle it maps to gets the same output count (within one: Adafruit truncates
    its duty cycle), the documented formula min + (max - min) * angle / actuation_range holds exactly, and
    what ServoKit refuses (an angle outside 0..actuation_range) armctl refuses too."""
    from armctl.bus.pca9685.backend import PCA9685Backend
    from armctl.calibration.servo import load_calibration
    from armctl.cli import main

    out = tmp_path / "servokit.yaml"
    argv = ["--arm", "mearm", "--calibration", "mearm-pca9685", "calibrate", "--joint", "elbow"]
    argv += ["--from-servokit", str(lo), str(hi), "--channel", "7", "--out", str(out)]
    argv += [] if rng is None else ["--actuation-range", str(rng)]
    argv += [] if zero_at is None else ["--zero-at", str(zero_at)]
    argv += ["--reverse"] if reverse else []
    assert main(argv) == 0, capsys.readouterr().err
    assert "saved" in capsys.readouterr().out
    cal = load_calibration(out)
    servo = cal.joints[2]
    assert servo.channel == 7 and (servo.min_us, servo.max_us) == (min(lo, hi), max(lo, hi))
    assert cal.joints[:2] == load_calibration(PRESET_CALIBRATION).joints[:2]  # the other servos as they were
    r = 180.0 if rng is None else rng
    z = r / 2 if zero_at is None else zero_at
    sign = -1.0 if reverse else 1.0

    def joint_deg(a):  # the joint angle at ServoKit angle a
        return sign * (a - z)

    angles = np.linspace(0.0, r, 37)
    ours = servo.value(np.radians(joint_deg(angles)))
    # adafruit_motor.servo's formula, to the 12 digits the YAML keeps
    assert ours == pytest.approx(lo + (hi - lo) * angles / r, abs=1e-7)

    def outside(servokit_angles):  # armctl's check of the pulses these ServoKit angles give the joint
        q = [[0.0, 1.0, float(np.radians(joint_deg(a)))] for a in servokit_angles]
        return cal.outside(cal.joints_to_values(q, check=False))

    assert not outside(angles).any() and outside([-1.0, r + 1.0]).all()

    ours_b = PCA9685Backend.create("pca9685sim://", cal)
    ours_b.open()
    theirs_bus = SimI2CBus(parse_url("pca9685sim://"))
    kit = _servokit(theirs_bus)
    kit.servo[7].set_pulse_width_range(lo, hi)
    kit.servo[7].actuation_range = r
    worst = 0
    count = hw.count_us(121)
    for a, us in zip(angles, ours):
        kit.servo[7].angle = float(a)
        ours_b.set_outputs({7: float(us)})
        mine = _off_counts(ours_b.i2c.bus.chips[0x40], 7)
        worst = max(worst, abs(mine - _off_counts(theirs_bus.chips[0x40], 7)))
        # ServoKit truncates its duty cycle; armctl writes the count nearest the formula's pulse
        assert abs(mine * count - (lo + (hi - lo) * a / r)) <= count / 2 + 1e-6
    for a in (-1.0, r + 1.0):
        with pytest.raises(ValueError):
            kit.servo[7].angle = a
    ours_b.close()
    assert worst <= 1


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--from-servokit", "750", "2250"], "needs --joint J"),
        (["--joint", "1", "--from-servokit", "750", "2600"], "MAX_US 2600: a hobby servo pulse is 500..2500 us"),
        (["--joint", "1", "--from-servokit", "750", "2250", "--zero-at", "200"], "200: ServoKit's angle at"),
        (["--joint", "1", "--from-servokit", "750", "2250", "--actuation-range", "0"], "0: a servo's range"),
        (["--joint", "1", "--from-servokit", "1500", "1500"], "must differ"),
        (["--joint", "1", "--from-servokit", "750", "2250", "--channel", "1"], "share channel 1"),
        (["--joint", "1", "--reverse"], "go with --from-servokit"),
    ],
)
def test_from_servokit_bad_input_is_one_line_and_no_file(tmp_path, capsys, extra, words):
    from armctl.cli import main

    out = tmp_path / "servokit.yaml"
    assert main(["--arm", "mearm", "--calibration", "mearm-pca9685", "calibrate", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert not out.exists()
