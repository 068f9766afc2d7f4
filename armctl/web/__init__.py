"""``armctl web``: the arm in a browser page, click to move.

- ``reach_map``: the reachable region as a bitmap (inside the joint limits cut to the calibration: the shading);
- ``controller``: owns the open backend on one worker thread; moves, stop, live pose;
- ``server``: the HTTP server (one page, a JSON API and a server-sent-events stream);
- ``static/``: the page (plain HTML, CSS and JavaScript, no build step).
"""
