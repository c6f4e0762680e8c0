"""CDK app (placeholder until the infrastructure issue lands)."""
