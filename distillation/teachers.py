"""The teacher registry: every teacher `distill.teacher` can name, looked up by name.

    spec = teacher_spec("openai")    # TeacherSpec: name, description, build, settings, network, writes_words
    teacher = make_teacher(config)   # what the flows and `autotriton distill` build from a DistillConfig

Adding a teacher touches its own file and one line here:
1. In its own file (e.g. distillation/my_teacher.py) write the teacher (the `Teacher` protocol,
   teacher.py), a pydantic class of its `distill.*` fields if it has any (flat names prefixed
   with the teacher's name, like `inductor_jobs`), and
   `TEACHER = TeacherSpec(name="mine", description=..., build=..., settings=..., network=...)`.
2. Register it at the bottom of this file: add its module to the import and
   `register_teacher(my_teacher.TEACHER)`.
Its name then is a valid `distill.teacher` and `--teacher` value, its fields join DistillConfig
(flat keys, as `config show` lists them), `network=True` has the flows retry its tasks
(orchestration.network_retries), and `writes_words=True` means it needs no LLM explainer.

A teacher registered at run time (a plugin, a test) is looked up and built the same way, but
reads only the fields DistillConfig already has: DistillConfig is composed from the settings
registered here when distillation/config.py is first imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from autotriton.distillation.teacher import GPUUnavailableError, Teacher, TeacherSpec

if TYPE_CHECKING:
    from autotriton.distillation.config import DistillConfig
    from autotriton.distillation.openai_teacher import OpenAITeacher

__all__ = [
    "TEACHERS", "TeacherSpec", "register_teacher", "teacher_spec", "teacher_settings",
    "make_teacher", "make_explainer", "GPUUnavailableError",
]

TEACHERS: dict[str, TeacherSpec] = {}  # name -> spec, in registration (= `--teacher` help) order


def register_teacher(spec: TeacherSpec, *, replace: bool = False) -> TeacherSpec:
    """Make `spec.name` a teacher `distill.teacher` can name; a second spec under a taken name is
    an error unless `replace`."""
    if spec.name in TEACHERS and TEACHERS[spec.name] is not spec and not replace:
        raise ValueError(f"teacher {spec.name!r} is already registered ({TEACHERS[spec.name].description}); "
                         "pick another name or pass replace=True")
    TEACHERS[spec.name] = spec
    return spec


def teacher_spec(name: str) -> TeacherSpec:
    """The registered teacher called `name`; ValueError naming the known ones otherwise."""
    try:
        return TEACHERS[name]
    except KeyError:
        raise ValueError(f"unknown teacher {name!r}: choose one of {', '.join(TEACHERS)}") from None


def teacher_settings() -> list[type[BaseModel]]:
    """The registered teachers' own config classes, in registration order (DistillConfig's parts)."""
    return [spec.settings for spec in TEACHERS.values() if spec.settings is not None]


def make_teacher(config: DistillConfig) -> Teacher:
    """The teacher `config.teacher` names, built from the config.

    Raises GPUUnavailableError for `inductor` without a CUDA GPU. With `explain_with_llm`, the
    replay teacher asks the configured endpoint to explain pairs that have no words.
    """
    return teacher_spec(config.teacher).build(config)


def make_explainer(config: DistillConfig) -> OpenAITeacher | None:
    """The LLM that writes instruction/reasoning for compiler pairs (`distill.explain_with_llm`),
    or None. The openai teacher writes its own words, so it needs none."""
    if not config.explain_with_llm or teacher_spec(config.teacher).writes_words:
        return None
    from autotriton.distillation.openai_teacher import OpenAITeacher

    return OpenAITeacher(config)


# The built-in teachers, in `--teacher` order. Adding a teacher: its import and one line (module docstring).
from autotriton.distillation import elementwise_teacher, inductor, openai_teacher, replay  # noqa: E402  (they import teacher.py, not this file)

register_teacher(replay.TEACHER)
register_teacher(inductor.TEACHER)
register_teacher(openai_teacher.TEACHER)
register_teacher(elementwise_teacher.TEACHER)
