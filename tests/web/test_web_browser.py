"""armctl web end to end in headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

Click a reachable point and the simulated arm's tool ends within 1 mm of it; click outside the
workspace and nothing moves and the page says why; STOP mid-move stops it; closing the page stops
it. Screenshots go to $ARMCTL_SCREENSHOT_DIR (default: the test's tmp dir).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import require
from web_helpers import call, served, sim_now

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1280,860",
]


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("ARMCTL_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def browser(tmp_path):
    require(Path(CHROMIUM).exists() and Path(DRIVER).exists(), "chromium and chromium-driver (Debian) not installed")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        require(False, "selenium not installed (pip install -e '.[test]')")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium", ignore_errors=True)


def _shot(driver, tmp_path, name):
    out = Path(os.environ.get("ARMCTL_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(out / name))


def _wait(cond, timeout_s=10.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.03)
    raise AssertionError(f"timed out waiting for {what}")


def _click_mm(driver, x_mm, y_mm):
    """A real mouse click on the canvas where the page draws the world point (x, y) mm."""
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = driver.find_element("id", "arm-canvas")
    p = driver.execute_script("return armctlView.toCanvas(arguments[0], arguments[1])", x_mm, y_mm)
    size = canvas.size
    dx, dy = p["x"] - size["width"] / 2, p["y"] - size["height"] / 2  # selenium 4: offsets from the centre
    ActionChains(driver).move_to_element_with_offset(canvas, int(round(dx)), int(round(dy))).click().perform()


def _state(server):
    return call(server, "GET", "/api/state")[1]


def test_click_moves_the_arm_refuses_the_unreachable_and_stops(browser, tmp_path):
    with served(rate=4) as srv:
        browser.get(srv.url)
        _wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        _shot(browser, tmp_path, "web_start.png")

        # a reachable point: the tool ends within 1 mm of where the click landed
        _click_mm(browser, 450, 250)
        _wait(lambda: _state(srv)["moving"], what="the move to start")
        _shot(browser, tmp_path, "web_moving.png")
        _wait(lambda: not _state(srv)["moving"], timeout_s=20, what="the move to end")
        time.sleep(0.1)
        target = np.array(_state(srv)["target_mm"]) / 1000
        assert np.hypot(*(target - [0.45, 0.25])) < 0.006  # the click landed within a couple of pixels
        tool, pulses, _ = sim_now(srv)
        print(f"clicked {target * 1000} mm, the simulated tool is at {tool * 1000} mm")
        assert np.hypot(*(tool - target)) < 1e-3
        _wait(lambda: "done" in browser.find_element("id", "message").text, what="the page to say done")

        # outside the workspace: nothing moves, the page says why
        _click_mm(browser, 680, 680)  # 962 mm from the base, reach 900 mm
        _wait(lambda: "beyond the outer reach" in browser.find_element("id", "message").text, what="the refusal")
        message = browser.find_element("id", "message").text
        assert "nothing moved" in message and "mm beyond the outer reach" in message
        assert "bad" in browser.find_element("id", "message").get_attribute("class")
        time.sleep(0.2)
        tool2, pulses2, _ = sim_now(srv)
        assert pulses2 == pulses and np.hypot(*(tool2 - tool)) < 1e-6
        _shot(browser, tmp_path, "web_refused.png")

        # STOP mid-move: the arm holds where it was
        browser.find_element("id", "speed").send_keys("\ue012" * 10)  # arrow left: slowest
        _click_mm(browser, 300, -450)
        _wait(lambda: _state(srv)["moving"], what="the second move to start")
        time.sleep(0.5)
        browser.find_element("id", "stop").click()
        _wait(lambda: not _state(srv)["moving"], timeout_s=3, what="the stop")
        _wait(lambda: "stopped (stop button)" in browser.find_element("id", "message").text, what="the page to say so")
        a, _, _ = sim_now(srv)
        time.sleep(0.3)
        b, _, _ = sim_now(srv)
        assert np.hypot(*(a - b)) < 1e-4, "the arm kept moving after stop"
        assert np.hypot(*(b - [0.3, -0.45])) > 0.05 and np.hypot(*(b - tool)) > 0.005  # stopped part way
        _shot(browser, tmp_path, "web_stopped.png")

        # closing the page mid-move stops the arm
        _click_mm(browser, 300, -450)
        _wait(lambda: _state(srv)["moving"], what="the third move to start")
        browser.get("about:blank")
        _wait(lambda: not _state(srv)["moving"], timeout_s=2, what="the stop on page close")
        assert "controlling page closed" in _state(srv)["message"]


def test_record_pose_button_writes_the_program_file(browser, tmp_path):
    from armctl.program import load_program

    path = tmp_path / "taught.yaml"
    with served(rate=4, record=path) as srv:
        browser.get(srv.url)
        _wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        assert browser.find_element("id", "record").is_displayed()
        _click_mm(browser, 450, 250)
        _wait(lambda: _state(srv)["moving"], what="the move to start")
        _wait(lambda: not _state(srv)["moving"], timeout_s=20, what="the move to end")
        _wait(lambda: browser.find_element("id", "record-pose").is_enabled(), what="the record button")
        browser.find_element("id", "record-name").send_keys("spot")
        browser.find_element("id", "record-pose").click()
        _wait(lambda: "recorded 'spot'" in browser.find_element("id", "message").text, what="the page to say so")
        _shot(browser, tmp_path, "web_recorded.png")
        prog = load_program(path)
        assert list(prog.poses) == ["spot"] and prog.steps[-1].target == "spot"
        tool, _, _ = sim_now(srv)
        assert "this session: spot" in browser.find_element("id", "record-file").text
        browser.find_element("id", "record-undo").click()
        _wait(lambda: "took back 'spot'" in browser.find_element("id", "message").text, what="the undo")
        assert not path.exists()
    print(f"recorded the pose at {tool * 1000} mm from the page")
