"""What every transport shares: publishing, recording pauses, budgets."""
