"""The judge layer: the provider protocol, the Judge wrapper, the providers, and the spec that
names a run's judge (:class:`JudgeSpec`)."""

from __future__ import annotations

from typing import Any

from ._catalogue import (
    BUILTIN_EMBEDDERS,
    BUILTIN_JUDGES,
    STRONGER_JUDGE,
    BuiltinModel,
    agreement_notice,
    conversation_notice,
)
from ._estimate import ESTIMATE_RULES, EstimatingProvider
from ._judge import Judge
from ._keys import provider_identity, step_key
from ._litellm import LiteLLMProvider
from ._local import LocalProvider
from ._model_files import DEFAULT_MODEL
from ._openai import OpenAIProvider
from ._parse import OutputError
from ._policy import RetryPolicy, SpendLimit
from ._protocol import ChoiceScores, Completion, JudgeProvider, JudgeRequest, Message, ProviderError
from ._records import (
    Answer,
    CallCache,
    JudgeCall,
    JudgeFailedError,
    JudgeRejectedError,
    JudgeStats,
    MemoryCallCache,
    record_calls,
)
from ._scripted import ScriptedProvider, UnexpectedPromptError
from ._spec import JudgeSpec, make_judge

__all__ = [
    "BUILTIN_EMBEDDERS",
    "BUILTIN_JUDGES",
    "DEFAULT_MODEL",
    "ESTIMATE_RULES",
    "STRONGER_JUDGE",
    "Answer",
    "BuiltinModel",
    "CallCache",
    "ChoiceScores",
    "Completion",
    "EstimatingProvider",
    "Judge",
    "JudgeCall",
    "JudgeFailedError",
    "JudgeProvider",
    "JudgeRejectedError",
    "JudgeRequest",
    "JudgeSpec",
    "JudgeStats",
    "LiteLLMProvider",
    "LocalProvider",
    "MemoryCallCache",
    "Message",
    "OpenAIProvider",
    "OutputError",
    "ProviderError",
    "RetryPolicy",
    "ScriptedProvider",
    "SpendLimit",
    "UnexpectedPromptError",
    "agreement_notice",
    "conversation_notice",
    "make_judge",
    "provider_identity",
    "record_calls",
    "step_key",
]

# The providers' old names, kept for one release: ``Judge(ScriptedJudge(...))`` read as a judge
# inside a judge. Each use warns.
_RENAMED = {"OpenAIJudge": "OpenAIProvider", "LocalJudge": "LocalProvider", "ScriptedJudge": "ScriptedProvider"}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        import warnings

        new = _RENAMED[name]
        warnings.warn(f"ragsight.judge.{name} is now {new}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
