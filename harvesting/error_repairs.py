"""The next guesses for a module whose probe failed, read from the error, best first. Each reader
returns nothing when the error is not its kind; the harvester (core.py) puts these before its
remaining guesses, within the attempt budget.
"""

from __future__ import annotations

from typing import Any

from autotriton.harvesting.input_repair import repair_attempts, solved_attempt
from autotriton.harvesting.module_arguments import tensor_argument
from autotriton.harvesting.module_arguments import (
    dimension_arguments, isinstance_arguments, layer_arguments, norm_arguments, sequence_arguments, stand_in_arguments,
)
from autotriton.harvesting.statement_inputs import indexed_input, said_shape_input, unpacked_input
from autotriton.harvesting.synthesis import Attempt


def error_repairs(model_source: str, attempt: Attempt, detail: str, class_name: str = "",
                  suggested_shapes: Any = None, suggested_init: Any = None) -> list[Attempt]:
    """Attempts that change what `detail` (the failed probe's whole traceback) says was wrong with
    `attempt`, in this order:
    - constructor arguments that hold a module or choose a layer kind (module_arguments.py): a torch
      layer where the code wanted one with weights ("Unsupported layer type <class '...GELU'>"), the
      stand-in network for a module called with more than its input, 2 then 1 for an int that named
      a layer's dimensionality, lists for tuples the code concatenates to lists, a batch norm where a
      LayerNorm guess met a channels-first map, the norm or module a failed isinstance assert names;
    - an input indexed with more axes than it has (`span_idx[:, :, 0]`);
    - an input unpacked into a fixed number of names (`a, b, c = feats.unbind(dim=-1)`, `b, n = ids.shape`);
    - an input whose shape the error's message states ("labels must be a 1D tensor of shape (batch_size,)");
    - a number the module keeps as a tensor (a loss's class weights), as a 1-element tensor;
    - the sizes that passed forward's own shape checks on symbolic shapes (the probe's suggestion);
    - the inputs reshaped as torch's shape error asks (input_repair.repair_attempts)."""
    out = (layer_arguments(model_source, attempt, detail, class_name) + stand_in_arguments(attempt, detail)
           + dimension_arguments(attempt, detail) + sequence_arguments(attempt, detail) + norm_arguments(attempt, detail)
           + isinstance_arguments(attempt, detail))
    for one in (indexed_input(model_source, attempt, detail), unpacked_input(model_source, attempt, detail),
                said_shape_input(model_source, attempt, detail),
                tensor_argument(model_source, attempt, detail),
                solved_attempt(attempt, suggested_shapes, suggested_init)):
        if one is not None:
            out.append(one)
    return out + repair_attempts(attempt, detail)
