"""The web page and its API with keep-out zones: the arm description lists them, a click into one is refused
(422, naming the zone and the link) and nothing moves, and the page draws them (headless Chromium)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.motion.test_zones import ARM_WITH_ZONES
from tests.web.browser import click_mm, wait
from tests.web.web_helpers import call, served, sim_now


@pytest.fixture
def zoned_arm(tmp_path):
    p = tmp_path / "zoned.yaml"
    p.write_text(ARM_WITH_ZONES)
    return str(p)


def test_api_lists_zones_and_refuses_a_move_into_one(zoned_arm):
    with served(arm_name=zoned_arm, heartbeat_timeout_s=30) as srv:
        status, arm = call(srv, "GET", "/api/arm")
        assert status == 200
        kinds = {z["kind"]: z for z in arm["zones"]}
        assert kinds["table"]["level_mm"] == pytest.approx(-300)
        assert kinds["box"]["min_mm"] == pytest.approx([300, -300]) and kinds["box"]["name"] == "box 'tray'"
        assert kinds["base"]["radius_mm"] == pytest.approx(60)
        session = call(srv, "POST", "/api/session")[1]["session"]
        h = {"X-Armctl-Session": session}
        tool, pulses, _ = sim_now(srv)
        status, body = call(srv, "POST", "/api/move", {"x_mm": 400, "y_mm": -250, "phi_deg": -90}, headers=h)
        assert status == 422, body
        assert "nothing moved" in body["error"] and "would enter box 'tray'" in body["error"]
        assert "link 3 (wrist to tool)" in body["error"]
        time.sleep(0.2)
        tool2, pulses2, _ = sim_now(srv)
        assert pulses2 == pulses and np.hypot(*(tool2 - tool)) < 1e-9


def _pixel(driver, x_mm, y_mm):
    return driver.execute_script(
        """const p = armctlView.toCanvas(arguments[0], arguments[1]);
        const c = document.getElementById('arm-canvas'); const d = window.devicePixelRatio || 1;
        return Array.from(c.getContext('2d').getImageData(Math.round(p.x * d), Math.round(p.y * d), 1, 1).data);""",
        x_mm,
        y_mm,
    )


def test_page_draws_the_zones_and_says_why_a_click_is_refused(browser, zoned_arm):
    with served(arm_name=zoned_arm, rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        time.sleep(0.3)

        def redness(x_mm, y_mm):
            r, g, b, _ = _pixel(browser, x_mm, y_mm)
            return r - (g + b) / 2

        clear = redness(375, -150)  # above the tray, in reach: shaded blue
        assert redness(375, -250) > clear + 40  # inside the tray: tinted red
        assert redness(375, -330) > clear + 40  # below the table too
        assert redness(-1000, -500) > 30  # the table out of reach: red on white
        _, pulses, _ = sim_now(srv)
        click_mm(browser, 420, -280)  # into the tray
        wait(lambda: "would enter" in browser.find_element("id", "message").text, what="the refusal")
        message = browser.find_element("id", "message").text
        assert "moved:" in message and "box 'tray'" in message
        time.sleep(0.2)
        assert sim_now(srv)[1] == pulses
