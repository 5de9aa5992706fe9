"""Simulated users: conversations with a chat assistant that nobody had to write.

    scenarios, problems = read_scenarios("scenarios.jsonl")
    result = await asimulate(scenarios, make_target("my_chat:answer"), make_judge("local"))

Each scenario says who the user is, what they want and what should come of it; the judge model
plays the user, turn by turn, until the goal is met, the user gives up or ``max_turns`` is
reached. The rows are ragsight conversations for ``ragsight evaluate``. The command line offers
the same: ``ragsight simulate``; see ``docs/simulate.md``.
"""

from ._run import (
    ENDINGS,
    FINISHED,
    USER_TEMPERATURE,
    SimulationResult,
    SimulationSettings,
    asimulate,
    fingerprint,
)
from ._scenario import (
    SCENARIO_FIELDS,
    Scenario,
    ScenarioFieldError,
    ScenarioProblem,
    read_scenarios,
    scenario_from_mapping,
)
from ._user import (
    STATUSES,
    Decision,
    Reading,
    SimulatedUser,
    conversation_block,
    decide,
    scenario_language,
)

__all__ = [
    "ENDINGS",
    "FINISHED",
    "SCENARIO_FIELDS",
    "STATUSES",
    "USER_TEMPERATURE",
    "Decision",
    "Reading",
    "Scenario",
    "ScenarioFieldError",
    "ScenarioProblem",
    "SimulatedUser",
    "SimulationResult",
    "SimulationSettings",
    "asimulate",
    "conversation_block",
    "decide",
    "fingerprint",
    "read_scenarios",
    "scenario_from_mapping",
    "scenario_language",
]
