"""armctl.core.config.load_yaml_file parses a file once for as long as its text is the same (issue 22: one jog read
the arm and calibration files twice, once for the host and once for the simulated board)."""

from __future__ import annotations

from unittest import mock

import pytest

from armctl.core import config
from armctl.errors import ConfigError


def test_a_file_read_again_is_not_parsed_again_and_each_caller_gets_its_own_copy(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("x: 1\nlist:\n  - 2\n  - {y: 3}\n")
    with mock.patch.object(config, "load_yaml_text", wraps=config.load_yaml_text) as parse:
        first = config.load_yaml_file(path)
        first["x"] = 99  # the caller's copy: the next read does not see it
        first["list"].append(4)
        second = config.load_yaml_file(path)
    assert parse.call_count == 1
    assert second == {"x": 1, "list": [2, {"y": 3}]}
    assert second.line_of("list") == 2 and second["list"].item_lines == [3, 4] and second["list"][1].line == 4


def test_a_changed_file_is_parsed_anew(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("x: 1\n")
    assert config.load_yaml_file(path) == {"x": 1}
    path.write_text("x: 2\n")  # same size, maybe the same mtime: the text decides
    assert config.load_yaml_file(path) == {"x": 2}
    path.write_text("x: [\n")
    with pytest.raises(ConfigError, match="YAML syntax error"):
        config.load_yaml_file(path)
    with pytest.raises(ConfigError, match="YAML syntax error"):  # an error is not kept as a document
        config.load_yaml_file(path)


def test_the_cache_stays_small(tmp_path):
    for i in range(config._PARSED_MAX + 10):
        path = tmp_path / f"f{i}.yaml"
        path.write_text(f"x: {i}\n")
        assert config.load_yaml_file(path) == {"x": i}
    assert len(config._PARSED) <= config._PARSED_MAX
