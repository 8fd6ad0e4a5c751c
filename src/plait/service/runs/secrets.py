"""`RunSecrets`: the variables a run reads and the mask of its secret values.

A run of user U reads the deployment-wide variables and U's own (`{{env.X}}`); the values of the
secret ones, plus the model-provider keys the operator set in the environment (the run's providers
use them even though flows cannot read them), are what must never leave the run in clear. The
launcher asks for both when it starts a run and hands the mask to the engine (`RunServices.mask`:
events, checkpoints and outputs leave masked); the views and streams ask for the mask of a run's
owner again when they show it (runs stored before a value became secret, or before masking
existed, are shown masked too); every mask handed out also goes to the process' log masking
(`plait.net.redact.log_masking`, installed on first use), so no log line carries a secret either.

Masks are compiled once per distinct set of secret values and shared by every run with that set,
so the matcher costs nothing per run after the first.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from plait.engine.context import operator_keys
from plait.engine.results import RunResult
from plait.net.redact import LogMasking, SecretMask, log_masking, secret_texts
from plait.store.repos import VariableRepo

log = logging.getLogger("plait.service")


class RunSecrets:
    """The variables and the secret mask of runs, per owner (see the module docstring)."""

    MAX_MASKS = 256

    def __init__(self, variables: VariableRepo, *, logs: LogMasking = log_masking) -> None:
        self.variables = variables
        self.logs = logs
        self._masks: OrderedDict[frozenset[str], SecretMask] = OrderedDict()

    @property
    def known(self) -> SecretMask:
        """Every secret value handed to a run of this process so far (for text that belongs to
        no particular run, such as the error of a run that crashed before it started)."""
        return self.logs.mask

    def mask(self, secrets: Iterable[Any]) -> SecretMask:
        """The mask of these secret values (and the operator's provider keys), compiled once per
        distinct set; also masked in the process' logs from now on."""
        key = secret_texts([*secrets, *operator_keys()])
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = SecretMask(key)
            while len(self._masks) > self.MAX_MASKS:
                self._masks.popitem(last=False)
        else:
            self._masks.move_to_end(key)
        self.logs.add(mask)
        self.logs.install()
        return mask

    async def for_run(self, owner_id: str | None) -> tuple[dict[str, Any], SecretMask]:
        """What a run of `owner_id` reads as `{{env.X}}`, and the mask of its secrets."""
        try:
            run_variables = await self.variables.for_run(owner_id)
        except Exception:  # noqa: BLE001 - an undecryptable variable must not stop every run
            log.exception("cannot read the variables of runs of %s", owner_id or "the deployment")
            return {}, self.mask(())
        return run_variables.values, self.mask(run_variables.secrets)

    async def mask_for(self, owner_id: str | None) -> SecretMask:
        """The mask of the secrets a run of `owner_id` reads now (to show a stored run)."""
        return (await self.for_run(owner_id))[1]


def masked_result(mask: SecretMask, result: RunResult) -> RunResult:
    """The result of a run as the service shows it (a synchronous run's answer): outputs, error
    and interrupts masked. Its events and node runs are the run's own; nobody shows them."""
    outputs, error = mask.value(result.outputs), result.error
    interrupts = mask.value(result.interrupts)
    if error is not None:
        error = mask.text(error)
    if outputs is result.outputs and error == result.error and interrupts is result.interrupts:
        return result
    return replace(result, outputs=outputs, error=error, interrupts=interrupts)


__all__ = ["RunSecrets", "masked_result"]
