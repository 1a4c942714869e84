"""The teacher registry (distillation/teachers.py): the three teachers, unknown names refused with
the known ones named (config and CLI), and a teacher registered here, in the test file only,
built through the path the flows and `autotriton distill` use."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from autotriton.configuration import ConfigError
from autotriton.distillation import (TEACHERS, DistillConfig, TeacherSpec, make_explainer, make_teacher, register_teacher,
                                     teacher_spec)
from autotriton.flows.config import load_config
from autotriton.records import Candidate, Problem


class EchoTeacher:
    """A teacher that answers nothing: enough to show it is found, configured and built."""

    name = "echo"
    version = "echo-1"

    def __init__(self, config):
        self.config = config
        self.counters: Counter = Counter()

    def generate(self, problems: list[Problem], samples: int) -> list[Candidate]:
        self.counters["asked"] += len(problems)
        return []


ECHO = TeacherSpec(name="echo", description="a test teacher that answers nothing", build=EchoTeacher, network=True)


@pytest.fixture
def echo_registered():
    register_teacher(ECHO)  # what a teacher's file and its registration line do, here in the test
    yield ECHO
    del TEACHERS["echo"]


def test_the_registry_lists_exactly_the_four_teachers():
    assert list(TEACHERS) == ["replay", "inductor", "openai", "elementwise"]
    assert [name for name, spec in TEACHERS.items() if spec.network] == ["openai"]  # the flows retry its tasks
    assert teacher_spec("openai").writes_words and not teacher_spec("replay").writes_words
    # Each teacher's own fields are flat distill.* keys of the one DistillConfig.
    fields = DistillConfig.model_fields
    for spec in TEACHERS.values():  # the elementwise teacher has no settings of its own
        assert spec.settings is None or set(spec.settings.model_fields) <= set(fields), spec.name
    assert [name for name, spec in TEACHERS.items() if spec.settings is None] == ["elementwise"]
    assert {"base_url", "model", "api_key_env", "inductor_jobs", "replay_paths", "teacher", "samples"} <= set(fields)


def test_an_unknown_teacher_is_an_error_naming_the_known_ones(tmp_path, monkeypatch):
    with pytest.raises(ValidationError, match="unknown teacher 'nope': choose one of replay, inductor, openai, elementwise"):
        DistillConfig(teacher="nope")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"distill.teacher = 'nope'.*choose one of replay, inductor, openai, elementwise"):
        load_config(environ={}, cli={"distill.teacher": "nope"})
    with pytest.raises(ValueError, match="choose one of replay, inductor, openai, elementwise"):
        teacher_spec("nope")

    from autotriton.flows.cli import app

    result = CliRunner().invoke(app, ["distill", "--teacher", "nope", "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2
    assert "--teacher 'nope'" in result.output and "replay, inductor, openai" in result.output


def test_a_second_teacher_under_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="'replay' is already registered"):
        register_teacher(TeacherSpec(name="replay", description="another", build=EchoTeacher))
    assert TEACHERS["replay"].build is not EchoTeacher


def test_a_teacher_registered_in_a_test_is_built_through_the_flow_path(echo_registered, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg, sources = load_config(environ={}, cli={"distill.teacher": "echo"})  # the config accepts its name
    assert sources["distill.teacher"] == "cli"
    teacher = make_teacher(cfg.distill)  # what tasks/resources.teacher builds for the flows
    assert isinstance(teacher, EchoTeacher) and teacher.config is cfg.distill
    assert teacher_spec(cfg.distill.teacher).network  # what flows/pipeline.py asks for retries
    assert make_explainer(cfg.distill) is None  # explain_with_llm is off

    from autotriton.tasks.resources import Resources

    with Resources() as resources:  # what a flow hands its distill tasks
        assert isinstance(resources.teacher(cfg.distill), EchoTeacher)


def test_the_distill_verb_accepts_a_registered_teacher(echo_registered, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from autotriton.flows.cli import app

    result = CliRunner().invoke(app, ["distill", "--teacher", "echo", "--db", str(tmp_path / "w.duckdb")])
    # The teacher was built; the empty warehouse is what stops the run.
    assert result.exit_code == 2 and "no runnable problems" in result.output, result.output
