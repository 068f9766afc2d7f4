"""armctl web in headless Chromium, as a user drives it: the top view of a base arm shades the reach at the
height in the z box (a shaded click moves, an unshaded one is refused), jog buttons for x, y, z and the tool
angle, and ``armctl web --watch``: a read-only page of an arm another armctl drives, which never gets in that
armctl's way."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from armctl.model.arm import load_arm
from armctl.model.workspace import shortfall
from tests.web.browser import api_state, click_pane, settle, shot, wait
from tests.web.web_helpers import served, sim_now

ROOT = Path(__file__).resolve().parents[2]


def _reach(srv, tool_mm, phi_deg=None, timeout_s=15.0):
    """Wait until the arm is still with its tool within 1 mm of ``tool_mm`` (and its angle within 0.5 deg)."""

    def there():
        st = api_state(srv)
        ok = not st["moving"] and np.linalg.norm(np.array(st["tool_mm"]) - tool_mm) < 1.0
        return ok and (phi_deg is None or abs(st["phi_deg"] - phi_deg) < 0.5)

    wait(there, timeout_s=timeout_s, what=f"the tool at {tool_mm} mm (state {api_state(srv)})")


def _in_control(driver, srv):
    driver.get(srv.url)
    wait(lambda: driver.find_element("id", "status").text == "in control", what="the page to take control")


def _set_z(driver, z_mm):
    box = driver.find_element("id", "z")
    box.clear()
    box.send_keys(str(z_mm))
    wait(lambda: driver.execute_script("return armctlView.top.shadedZ()") == z_mm, what="the shading at that z")


def test_top_view_shades_the_reach_at_the_height_in_the_box(browser, tmp_path):
    arm = load_arm("mearm")
    with served(arm_name="mearm", rate=4) as srv:
        _in_control(browser, srv)
        grid = [(x, y) for x in range(-40, 241, 20) for y in range(-220, 221, 20)]
        shaded = {}
        for z in (-40, 80):
            _set_z(browser, z)
            got = browser.execute_script(
                "return arguments[0].map(([x, y]) => armctlView.top.shadedAt(x, y))", [list(p) for p in grid]
            )
            shaded[z] = dict(zip(grid, got))
            exact = [shortfall(arm, (x / 1000, y / 1000, z / 1000)) < 0.004 for x, y in grid]
            agree = sum(a == b for a, b in zip(got, exact)) / len(grid)
            assert agree > 0.95, (z, agree)
        # not "at any height": points reached at one height and not at the other
        differ = [p for p in grid if shaded[-40][p] != shaded[80][p]]
        assert len(differ) > 10
        shot(browser, tmp_path, "web_top_reach_z80.png")

        # at z = 80 mm: a click inside the shading moves there, a click on a point shaded only at z = -40 is refused
        inside = next(
            p
            for p in [(140, 0), (140, 40), (120, -60)]
            if shaded[80][p] and shortfall(arm, (p[0] / 1e3, p[1] / 1e3, 0.08)) == 0
        )
        click_pane(browser, "top-canvas", "top", *inside)
        settle(srv)
        tool, _, _ = sim_now(srv)
        assert np.linalg.norm(tool - np.array([*inside, 80]) / 1000) < 0.003
        outside = next(
            p
            for p in differ
            if shaded[-40][p] and not shaded[80][p] and shortfall(arm, (p[0] / 1e3, p[1] / 1e3, 0.08)) > 0.006
        )
        click_pane(browser, "top-canvas", "top", *outside)
        wait(lambda: "outside the reach" in browser.find_element("id", "message").text, what="the refusal")
        tool2, _, _ = sim_now(srv)
        assert np.linalg.norm(tool2 - tool) < 1e-6


def test_jog_buttons_move_x_y_z_and_turn_the_tool_angle(browser, tmp_path):
    with served(arm_name="braccio", rate=1) as srv:  # a base arm with 3 links: x, y, z and the tool angle
        _in_control(browser, srv)
        for bid in ("jog-x+", "jog-x-", "jog-y+", "jog-y-", "jog-z+", "jog-z-", "jog-phi+", "jog-phi-"):
            assert browser.find_element("id", bid).is_displayed(), bid
        start = api_state(srv)
        t0, phi0 = np.array(start["tool_mm"]), start["phi_deg"]
        for bid, delta in (
            ("jog-x-", (-10, 0, 0)),
            ("jog-y-", (0, -10, 0)),
            ("jog-z-", (0, 0, -10)),
            ("jog-z+", (0, 0, 10)),
        ):
            browser.find_element("id", bid).click()
            t0 = t0 + delta
            _reach(srv, t0, phi0)  # one step along the axis, the tool angle kept
        browser.find_element("id", "jog-phi+").click()
        _reach(srv, t0, phi0 + 10)  # the tool angle turned by a step, the tool point kept
        shot(browser, tmp_path, "web_jog.png")
    with served(arm_name="seed-2link", rate=1) as srv:  # planar, 2 links: no z, no tool angle
        _in_control(browser, srv)
        for bid in ("jog-z+", "jog-z-", "jog-phi+", "jog-phi-"):
            assert not browser.find_element("id", bid).is_displayed(), bid
        from selenium.webdriver.support.select import Select

        Select(browser.find_element("id", "jog-step")).select_by_value("5")
        start = np.array(api_state(srv)["tool_mm"])
        browser.find_element("id", "jog-x-").click()
        _reach(srv, start - [5, 0])


def test_watch_a_run_another_armctl_drives(browser, tmp_path):
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "armctl", "web", "--watch", "--listen", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    driver = None
    try:
        url = None
        for _ in range(10):
            line = watcher.stdout.readline()
            m = re.search(r"open (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, watcher.stderr.read() if watcher.poll() is not None else "no URL printed"
        browser.get(url)
        wait(lambda: "watching" in browser.find_element("id", "status").text, what="the page to watch")
        assert browser.find_element("id", "home").get_attribute("disabled") is not None
        # the driver starts after the watcher is up: nothing keeps it off its port
        driver = subprocess.Popen(
            [sys.executable, "-m", "armctl", "run", str(ROOT / "examples" / "pick_and_place.yaml")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait(lambda: browser.find_element("id", "status").text == "watching: moving", timeout_s=20, what="moving")
        seen = set()
        t_end = time.monotonic() + 4.0
        while time.monotonic() < t_end:
            seen.add(browser.find_element("id", "tool-xy").text)
            time.sleep(0.2)
        assert len(seen) > 5, seen  # the page follows the arm as the other armctl moves it
        assert f"pid {driver.pid}" in browser.find_element("id", "message").text
        shot(browser, tmp_path, "web_watch.png")
        reply = browser.execute_script(
            "return fetch('/api/move', {method: 'POST', headers: {'Content-Type': 'application/json',"
            " 'X-Armctl-Token': TOKEN},"
            " body: JSON.stringify({x_mm: 400, y_mm: 100})}).then(async r => [r.status, await r.json()])"
        )
        assert reply[0] == 403 and f"pid {driver.pid}" in reply[1]["error"] and "only watches" in reply[1]["error"]
        out, err = driver.communicate(timeout=90)
        assert driver.returncode == 0, err  # the run was never disturbed
        final = re.search(r"tool at \(?x=([-\d.]+) m y=([-\d.]+)", out) or re.search(
            r"\(([-\d.]+), ([-\d.]+)\) mm", out
        )
        wait(lambda: browser.find_element("id", "status").text == "watching (read-only)", timeout_s=10, what="idle")
        shown = [float(v) for v in browser.find_element("id", "tool-xy").text.replace(" mm", "").split(",")]
        assert final is not None, out
        want = [float(final.group(1)), float(final.group(2))]
        if abs(want[0]) < 5:  # metres
            want = [v * 1000 for v in want]
        assert np.allclose(shown, want, atol=1.0), (shown, out)
    finally:
        for p in (driver, watcher):
            if p is not None and p.poll() is None:
                p.terminate()
                p.communicate(timeout=20)
