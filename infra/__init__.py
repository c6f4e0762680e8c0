"""The CDK app of the agent memory service (see app.py and docs/deploy.md)."""
