"""armctl web with an arm on a rotating base, in headless Chromium: the top view beside the side view.

A click on the top view moves the simulated MeArm's tool to that (x, y) at the height in the z box; a
click on the side view moves it within the plane the arm stands in; a click outside the reach moves
nothing and the page says by how much. Screenshots go to $ARMCTL_SCREENSHOT_DIR (default: tmp dir).
"""

from __future__ import annotations

import math
import time

import numpy as np

from tests.web.browser import api_state, click_pane, settle, shot, wait
from tests.web.web_helpers import served, sim_now


def test_top_and_side_views_move_a_base_arm(browser, tmp_path):
    with served(arm_name="mearm", rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        assert browser.find_element("id", "top-canvas").is_displayed()
        assert "x, y, z" in browser.find_element("id", "tool").text
        shot(browser, tmp_path, "web_base_start.png")

        # top view: (x, y) on the table at the height typed in the z box
        browser.find_element("id", "z").send_keys("10")
        click_pane(browser, "top-canvas", "top", 150, 60)
        settle(srv)
        target = np.array(api_state(srv)["target_mm"]) / 1000
        assert np.linalg.norm(target - [0.15, 0.06, 0.01]) < 0.003  # the click landed within a pixel or two
        tool, pulses, _ = sim_now(srv)
        assert len(tool) == 3 and np.linalg.norm(tool - target) < 1e-3
        wait(lambda: "done" in browser.find_element("id", "message").text, what="the page to say done")
        shot(browser, tmp_path, "web_base_top_click.png")

        # side view: distance from the base axis and height, in the plane the arm stands in
        base = math.radians(api_state(srv)["q_deg"][0])
        click_pane(browser, "arm-canvas", "side", 180, -20)
        settle(srv)
        target = np.array(api_state(srv)["target_mm"]) / 1000
        want = [0.18 * math.cos(base), 0.18 * math.sin(base), -0.02]
        assert np.linalg.norm(target - want) < 0.003
        tool, pulses, _ = sim_now(srv)
        assert np.linalg.norm(tool - target) < 1e-3
        assert abs(math.radians(api_state(srv)["q_deg"][0]) - base) < 1e-3  # the base did not turn
        shot(browser, tmp_path, "web_base_side_click.png")

        # out of reach (low, close to the base axis): nothing moves, the page says by how much
        click_pane(browser, "arm-canvas", "side", 40, -60)
        wait(lambda: "outside the reach" in browser.find_element("id", "message").text, what="the refusal")
        assert "nothing moved" in browser.find_element("id", "message").text
        time.sleep(0.2)
        tool2, pulses2, _ = sim_now(srv)
        assert pulses2 == pulses and np.linalg.norm(tool2 - tool) < 1e-6
        shot(browser, tmp_path, "web_base_refused.png")
