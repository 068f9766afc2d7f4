"""The web page's program panel and run control, in headless Chromium (as tests/web/test_web_browser.py): load a
program file (its path is drawn and summarised), Run it, Pause (the simulated arm holds, the page says HELD),
speed override +/- (the server's override follows the page's clicks), Resume (it goes on and finishes). The
API refuses a program that does not plan, and an override outside 10..200 %."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tests.web.browser import api_state, shot, wait
from tests.web.web_helpers import call, served, sim_now

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"


def test_load_preview_run_pause_override_resume(browser, tmp_path):
    with served(rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        browser.find_element("id", "program-file").send_keys(str(PROGRAM))
        wait(lambda: "31 steps" in browser.find_element("id", "program-info").text, what="the program's preview")
        assert browser.execute_script("return program.path_mm.length") > 100
        wait(lambda: browser.find_element("id", "program-run").is_enabled(), what="the run button")
        shot(browser, tmp_path, "web_program_loaded.png")
        browser.find_element("id", "program-run").click()
        wait(lambda: api_state(srv)["moving"], what="the program to start")
        time.sleep(1.5)  # 6 s of the program (rate 4)
        browser.find_element("id", "pause").click()
        wait(lambda: api_state(srv)["control"]["state"] == "held", timeout_s=10, what="the hold")
        wait(lambda: "HELD" in browser.find_element("id", "hold-state").text, what="the page to say HELD")
        time.sleep(0.3)
        a, pulses_a, _ = sim_now(srv)
        time.sleep(0.5)
        b, pulses_b, _ = sim_now(srv)
        assert pulses_b == pulses_a and np.allclose(a, b, atol=1e-6), "the arm moved while held"
        assert api_state(srv)["moving"], "a hold must keep the rest of the program"
        for _ in range(3):
            browser.find_element("id", "faster").click()
            time.sleep(0.2)
        wait(lambda: browser.find_element("id", "override").text == "130 %", what="the override to show 130 %")
        assert abs(srv.controller.robot.speed_override - 1.3) < 1e-9
        shot(browser, tmp_path, "web_program_held.png")
        browser.find_element("id", "resume").click()
        wait(lambda: not api_state(srv)["control"]["paused"], what="the resume")
        time.sleep(0.3)
        c, _, _ = sim_now(srv)
        assert np.linalg.norm(c - b) > 1e-3, "Resume did not go on"
        wait(lambda: not api_state(srv)["moving"], timeout_s=60, what="the program to finish")
        assert "done: page:pick_and_place.yaml" in api_state(srv)["message"]
        rec = srv.controller.robot.last_run()
        assert rec.status == "done" and rec.step == rec.steps - 1 and rec.digest == ""  # the page's copy: no file


def test_program_and_override_api_refuse_bad_input():
    with served(rate=20) as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        h = {"X-Armctl-Session": session}
        bad = PROGRAM.read_text().replace("part3: {xy_mm: [620, -250]", "part3: {xy_mm: [1620, -250]")
        status, body = call(srv, "POST", "/api/program/preview", {"text": bad, "name": "p.yaml"}, headers=h)
        assert status == 422 and "nothing moved" in body["error"] and "p.yaml" in body["error"]
        status, body = call(srv, "POST", "/api/override", {"percent": 250}, headers=h)
        assert status == 400 and "percent" in body["error"]
        status, body = call(srv, "POST", "/api/program/run", {"text": "x: [", "name": "../p.yaml"}, headers=h)
        assert status == 400
        status, _ = call(srv, "POST", "/api/pause", {})
        assert status == 409  # only the page in control (this request has no session)
        assert not srv.controller.robot.moving


def test_space_and_enter_on_the_page_hold_and_resume(browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    with served(rate=2) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        browser.find_element("id", "program-file").send_keys(str(PROGRAM))
        wait(lambda: browser.find_element("id", "program-run").is_enabled(), what="the run button")
        browser.find_element("id", "program-run").click()
        wait(lambda: api_state(srv)["moving"], what="the program to start")
        ActionChains(browser).click(browser.find_element("id", "message")).perform()  # focus off the buttons
        ActionChains(browser).send_keys(" ").perform()
        wait(lambda: api_state(srv)["control"]["state"] == "held", timeout_s=10, what="Space to hold")
        ActionChains(browser).send_keys("+").perform()
        wait(lambda: abs(srv.controller.robot.speed_override - 1.1) < 1e-9, what="+ to raise the override")
        ActionChains(browser).send_keys(Keys.ENTER).perform()
        wait(lambda: not api_state(srv)["control"]["paused"], what="Enter to resume")
        srv.controller.stop("test over")
