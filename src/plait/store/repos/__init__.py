"""Repositories: the narrow async operations the service layer and the workers need, one module
per table family. Each method is one short transaction (see `base.Repo`)."""

from plait.store.repos.api_keys import ApiKeyRepo
from plait.store.repos.auth_tokens import SESSION, SIGNIN, AuthTokenRepo
from plait.store.repos.base import Repo, Sessions, sha256_hex
from plait.store.repos.components import ComponentRepo
from plait.store.repos.decisions import DecisionRepo
from plait.store.repos.events import EventRepo
from plait.store.repos.flows import FlowRepo
from plait.store.repos.human_tasks import HumanTaskRepo
from plait.store.repos.knowledge import KnowledgeRepo
from plait.store.repos.restore_points import RestorePointRepo
from plait.store.repos.runs import Heartbeat, RunRepo
from plait.store.repos.shares import ShareRepo
from plait.store.repos.trigger_fires import TriggerFireRepo
from plait.store.repos.triggers import TriggerRepo
from plait.store.repos.users import UserRepo
from plait.store.repos.variables import REDACTED, RunVariables, VariableRepo, VariableView

__all__ = [
    "REDACTED",
    "SESSION",
    "SIGNIN",
    "ApiKeyRepo",
    "AuthTokenRepo",
    "ComponentRepo",
    "DecisionRepo",
    "EventRepo",
    "FlowRepo",
    "Heartbeat",
    "HumanTaskRepo",
    "KnowledgeRepo",
    "Repo",
    "RestorePointRepo",
    "RunRepo",
    "RunVariables",
    "Sessions",
    "ShareRepo",
    "TriggerFireRepo",
    "TriggerRepo",
    "UserRepo",
    "VariableRepo",
    "VariableView",
    "sha256_hex",
]
