"""The campaign policies (what to run next), one module each: this package's modules are the registry.

Each module declares NAME and POLICY, a class implementing campaign.policy.Policy and constructed as
POLICY(spec, seed, **options):
- fixed.py     every configuration `repetitions` times, in the spec's seeded schedule;
- adaptive.py  repetitions until each mean is precise enough (a spec with `precision`);
- racing.py    `tcpprofile tune`'s race over one link's candidates, under a racing rule (campaign/rules/).
"""

from __future__ import annotations

from ...spec import CampaignSpec
from ..policy import Policy
from ...registry import modules_of

POLICIES: dict[str, type] = {name: module.POLICY for name, module in modules_of(__name__, __path__).items()}


def for_spec(spec: CampaignSpec, seed: int | None) -> Policy:
    """The policy a spec asks for: adaptive repetitions with `precision`, else the fixed design."""
    return POLICIES["adaptive" if spec.adaptive else "fixed"](spec, seed)
