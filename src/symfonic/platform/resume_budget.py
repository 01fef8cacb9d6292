"""`admit_resume_budget` at the path its reference page documents; the code is in
`symfonic.turns.budget`.
"""

from symfonic.turns.budget import (
    AdmittedBudget,
    BudgetedAgent,
    EventGuard,
    IssuerScope,
    Quota,
    admit_resume_budget,
)

__all__ = [
    "AdmittedBudget",
    "BudgetedAgent",
    "EventGuard",
    "IssuerScope",
    "Quota",
    "admit_resume_budget",
]
