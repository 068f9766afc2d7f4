"""armctl web end to end in headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

Click a reachable point and the simulated arm's tool ends within 1 mm of it; click outside the
workspace and nothing moves and the page says why; STOP mid-move stops it; closing the page stops
it. Screenshots go to $ARMCTL_SCREENSHOT_DIR (default: the test's tmp dir).
"""

from __future__ import annotations

import time

import numpy as np

from tests.web.browser import api_state, click_mm, shot, wait
from tests.web.web_helpers import served, sim_now


def test_click_moves_the_arm_refuses_the_unreachable_and_stops(browser, tmp_path):
    with served(rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        shot(browser, tmp_path, "web_start.png")

        # a reachable point: the tool ends within 1 mm of where the click landed
        click_mm(browser, 450, 250)
        wait(lambda: api_state(srv)["moving"], what="the move to start")
        shot(browser, tmp_path, "web_moving.png")
        wait(lambda: not api_state(srv)["moving"], timeout_s=20, what="the move to end")
        time.sleep(0.1)
        target = np.array(api_state(srv)["target_mm"]) / 1000
        assert np.hypot(*(target - [0.45, 0.25])) < 0.006  # the click landed within a couple of pixels
        tool, pulses, _ = sim_now(srv)
        print(f"clicked {target * 1000} mm, the simulated tool is at {tool * 1000} mm")
        assert np.hypot(*(tool - target)) < 1e-3
        wait(lambda: "done" in browser.find_element("id", "message").text, what="the page to say done")

        # outside the workspace: nothing moves, the page says why
        click_mm(browser, 680, 680)  # 962 mm from the base, reach 900 mm
        wait(lambda: "beyond the outer reach" in browser.find_element("id", "message").text, what="the refusal")
        message = browser.find_element("id", "message").text
        assert "nothing moved" in message and "mm beyond the outer reach" in message
        assert "bad" in browser.find_element("id", "message").get_attribute("class")
        time.sleep(0.2)
        tool2, pulses2, _ = sim_now(srv)
        assert pulses2 == pulses and np.hypot(*(tool2 - tool)) < 1e-6
        shot(browser, tmp_path, "web_refused.png")

        # STOP mid-move: the arm holds where it was
        browser.find_element("id", "speed").send_keys("\ue012" * 10)  # arrow left: slowest
        click_mm(browser, 300, -450)
        wait(lambda: api_state(srv)["moving"], what="the second move to start")
        time.sleep(0.5)
        browser.find_element("id", "stop").click()
        wait(lambda: not api_state(srv)["moving"], timeout_s=3, what="the stop")
        wait(lambda: "stopped (stop button)" in browser.find_element("id", "message").text, what="the page to say so")
        a, _, _ = sim_now(srv)
        time.sleep(0.3)
        b, _, _ = sim_now(srv)
        assert np.hypot(*(a - b)) < 1e-4, "the arm kept moving after stop"
        assert np.hypot(*(b - [0.3, -0.45])) > 0.05 and np.hypot(*(b - tool)) > 0.005  # stopped part way
        shot(browser, tmp_path, "web_stopped.png")

        # closing the page mid-move stops the arm
        click_mm(browser, 300, -450)
        wait(lambda: api_state(srv)["moving"], what="the third move to start")
        browser.get("about:blank")
        wait(lambda: not api_state(srv)["moving"], timeout_s=2, what="the stop on page close")
        assert "controlling page closed" in api_state(srv)["message"]


def test_record_pose_button_writes_the_program_file(browser, tmp_path):
    from armctl.program import load_program

    path = tmp_path / "taught.yaml"
    with served(rate=4, record=path) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        assert browser.find_element("id", "record").is_displayed()
        click_mm(browser, 450, 250)
        wait(lambda: api_state(srv)["moving"], what="the move to start")
        wait(lambda: not api_state(srv)["moving"], timeout_s=20, what="the move to end")
        wait(lambda: browser.find_element("id", "record-pose").is_enabled(), what="the record button")
        browser.find_element("id", "record-name").send_keys("spot")
        browser.find_element("id", "record-pose").click()
        wait(lambda: "recorded 'spot'" in browser.find_element("id", "message").text, what="the page to say so")
        shot(browser, tmp_path, "web_recorded.png")
        prog = load_program(path)
        assert list(prog.poses) == ["spot"] and prog.steps[-1].target == "spot"
        tool, _, _ = sim_now(srv)
        assert "this session: spot" in browser.find_element("id", "record-file").text
        browser.find_element("id", "record-undo").click()
        wait(lambda: "took back 'spot'" in browser.find_element("id", "message").text, what="the undo")
        assert not path.exists()
    print(f"recorded the pose at {tool * 1000} mm from the page")
