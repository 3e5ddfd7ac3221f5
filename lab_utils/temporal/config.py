"""The tunable surface: the five settings a proposer may change, and nothing else.

Everything else (owner isolation, deletion, the write policy, the evaluator) is fixed code.
A config comes from keywords, from JSON (`parse_config`, as the CLI reads it) or from `grid()`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

from pydantic import BaseModel, Field, ValidationError

from lab_utils.errors import describe
from lab_utils.files import read_utf8
from .records import STRICT


class Config(BaseModel):
    """Defaults are the published baseline; an unknown setting is an error, not ignored."""

    model_config = STRICT

    min_confidence: float = Field(0.7, ge=0.0, le=1.0, allow_inf_nan=False)
    filter_entity: bool = False
    time_aware: bool = False
    deduplicate: bool = False
    top_k: int = Field(3, ge=1, le=8)


GRID_MIN_CONFIDENCE = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
GRID_TOP_K = range(1, 9)


def grid() -> Iterator[Config]:
    """The retrospective grid: 6 thresholds x 3 switches x 8 top_k values = 384 configs."""
    switches = (False, True)
    for threshold, entity, time, dedupe, top_k in itertools.product(
            GRID_MIN_CONFIDENCE, switches, switches, switches, GRID_TOP_K):
        yield Config(min_confidence=threshold, filter_entity=entity, time_aware=time,
                     deduplicate=dedupe, top_k=top_k)


def parse_config(text: str) -> Config:
    """A Config from inline JSON or a JSON file; raises ValueError naming what is wrong."""
    if text.lstrip().startswith("{"):
        source = "inline JSON"
    else:
        source = text
        try:
            text = read_utf8(text)  # not UTF-8: a NotUTF8Error, a ValueError naming the file
        except OSError as error:
            raise ValueError(f"{source}: cannot read this config file ({error.strerror}); "
                             "CONFIG is a JSON file or an inline JSON object") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:  # RecursionError: nested too deeply
        raise ValueError(f"{source}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object of settings, got {type(data).__name__}")
    unknown = sorted(set(data) - set(Config.model_fields))
    if unknown:
        raise ValueError(f"{source}: unknown setting {', '.join(map(repr, unknown))}; "
                         f"the settings are {', '.join(Config.model_fields)}")
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        raise ValueError(f"{source}: {describe(error)}") from None
