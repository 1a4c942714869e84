"""The `autotriton` command: one verb per pipeline stage.

Conventions every verb follows (see flows/cli/common.py):
- `--json` prints exactly one JSON object (the verb's summary) on stdout; all human output
  (tables, progress bars, logs) then goes to stderr.
- Errors name the input at fault and what to do, and exit with code 2.
"""

from __future__ import annotations

from autotriton.flows.cli.common import app, main  # noqa: F401

# Each module below registers its verbs on `app` when imported.
from autotriton.flows.cli import config_cmd  # noqa: F401,E402
from autotriton.flows.cli import db_cmd  # noqa: F401,E402
from autotriton.flows.cli import distill_cmd  # noqa: F401,E402
from autotriton.flows.cli import eval_cmd  # noqa: F401,E402
from autotriton.flows.cli import train_cmd  # noqa: F401,E402
from autotriton.flows.cli import harvest_cmd  # noqa: F401,E402
from autotriton.flows.cli import flow_cmd  # noqa: F401,E402
from autotriton.flows.cli import validate_cmd  # noqa: F401,E402
from autotriton.flows.cli import env_cmd  # noqa: F401,E402
from autotriton.flows.cli import suite_cmd  # noqa: F401,E402

from autotriton.flows.cli.common import accept_globals_after_verbs  # noqa: E402

accept_globals_after_verbs(app)
