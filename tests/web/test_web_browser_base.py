"""armctl web with an arm on a rotating base, in headless Chromium: the top view beside the side view.

A click on the top view moves the simulated MeArm's tool to that (x, y) at the height in the z box; a
click on the side view moves it within the plane the arm stands in; a click outside the reach moves
nothing and the page says by how much. Screenshots go to $ARMCTL_SCREENSHOT_DIR (default: tmp dir).
"""

from __future__ import annotations

import math
import time

import numpy as np
from test_web_browser import _shot, _wait, browser  # noqa: F401  (browser: the fixture)
from web_helpers import call, served, sim_now


def _click(driver, canvas_id, pane, a_mm, b_mm):
    """A real mouse click on pane ``pane`` ("top" or "side") where it draws the point (a, b) mm."""
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = driver.find_element("id", canvas_id)
    p = driver.execute_script(f"return armctlView.{pane}.toCanvas(arguments[0], arguments[1])", a_mm, b_mm)
    size = canvas.size
    dx, dy = p["x"] - size["width"] / 2, p["y"] - size["height"] / 2  # selenium 4: offsets from the centre
    ActionChains(driver).move_to_element_with_offset(canvas, int(round(dx)), int(round(dy))).click().perform()


def _state(server):
    return call(server, "GET", "/api/state")[1]


def _settle(srv):
    _wait(lambda: _state(srv)["moving"], what="the move to start")
    _wait(lambda: not _state(srv)["moving"], timeout_s=20, what="the move to end")
    time.sleep(0.1)


def test_top_and_side_views_move_a_base_arm(browser, tmp_path):  # noqa: F811
    with served(arm_name="mearm", rate=4) as srv:
        browser.get(srv.url)
        _wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        assert browser.find_element("id", "top-canvas").is_displayed()
        assert "x, y, z" in browser.find_element("id", "tool").text
        _shot(browser, tmp_path, "web_base_start.png")

        # top view: (x, y) on the table at the height typed in the z box
        browser.find_element("id", "z").send_keys("10")
        _click(browser, "top-canvas", "top", 150, 60)
        _settle(srv)
        target = np.array(_state(srv)["target_mm"]) / 1000
        assert np.linalg.norm(target - [0.15, 0.06, 0.01]) < 0.003  # the click landed within a pixel or two
        tool, pulses, _ = sim_now(srv)
        assert len(tool) == 3 and np.linalg.norm(tool - target) < 1e-3
        _wait(lambda: "done" in browser.find_element("id", "message").text, what="the page to say done")
        _shot(browser, tmp_path, "web_base_top_click.png")

        # side view: distance from the base axis and height, in the plane the arm stands in
        base = math.radians(_state(srv)["q_deg"][0])
        _click(browser, "arm-canvas", "side", 180, -20)
        _settle(srv)
        target = np.array(_state(srv)["target_mm"]) / 1000
        want = [0.18 * math.cos(base), 0.18 * math.sin(base), -0.02]
        assert np.linalg.norm(target - want) < 0.003
        tool, pulses, _ = sim_now(srv)
        assert np.linalg.norm(tool - target) < 1e-3
        assert abs(math.radians(_state(srv)["q_deg"][0]) - base) < 1e-3  # the base did not turn
        _shot(browser, tmp_path, "web_base_side_click.png")

        # out of reach (low, close to the base axis): nothing moves, the page says by how much
        _click(browser, "arm-canvas", "side", 40, -60)
        _wait(lambda: "outside the reach" in browser.find_element("id", "message").text, what="the refusal")
        assert "nothing moved" in browser.find_element("id", "message").text
        time.sleep(0.2)
        tool2, pulses2, _ = sim_now(srv)
        assert pulses2 == pulses and np.linalg.norm(tool2 - tool) < 1e-6
        _shot(browser, tmp_path, "web_base_refused.png")
