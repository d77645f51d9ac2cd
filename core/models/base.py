"""The base of moot's data models.

pydantic builds a model's validator when its class is defined unless told to wait; moot
defines some ninety models (events, state, config, tools), and building them all at import
cost a tenth of a second of the time before the app's first screen, which shows none of
them yet. `Model` waits: each validator is built the first time it is used.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(defer_build=True)
