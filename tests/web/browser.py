"""What the browser tests do on the page (the ``browser`` fixture is in tests/web/conftest.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.web.web_helpers import call


def shot(driver, tmp_path, name):
    """A screenshot ``name`` into $ARMCTL_SCREENSHOT_DIR (default: the test's folder)."""
    out = Path(os.environ.get("ARMCTL_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(out / name))


def wait(cond, timeout_s=10.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.03)
    raise AssertionError(f"timed out waiting for {what}")


def _click_at(driver, canvas, p):
    from selenium.webdriver.common.action_chains import ActionChains

    size = canvas.size
    dx, dy = p["x"] - size["width"] / 2, p["y"] - size["height"] / 2  # selenium 4: offsets from the centre
    ActionChains(driver).move_to_element_with_offset(canvas, int(round(dx)), int(round(dy))).click().perform()


def click_mm(driver, x_mm, y_mm):
    """A real mouse click on the canvas where the page draws the world point (x, y) mm."""
    canvas = driver.find_element("id", "arm-canvas")
    _click_at(
        driver, canvas, driver.execute_script("return armctlView.toCanvas(arguments[0], arguments[1])", x_mm, y_mm)
    )


def click_pane(driver, canvas_id, pane, a_mm, b_mm):
    """A real mouse click on pane ``pane`` ("top" or "side") where it draws the point (a, b) mm."""
    canvas = driver.find_element("id", canvas_id)
    p = driver.execute_script(f"return armctlView.{pane}.toCanvas(arguments[0], arguments[1])", a_mm, b_mm)
    _click_at(driver, canvas, p)


def api_state(server):
    return call(server, "GET", "/api/state")[1]


def settle(srv):
    """Until a move starts and ends."""
    wait(lambda: api_state(srv)["moving"], what="the move to start")
    wait(lambda: not api_state(srv)["moving"], timeout_s=20, what="the move to end")
    time.sleep(0.1)
