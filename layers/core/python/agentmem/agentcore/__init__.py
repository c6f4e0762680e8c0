"""The Bedrock AgentCore Memory data plane served on this service's memory (docs/agentcore.md): boto3's
``bedrock-agentcore`` client, the AgentCore SDK and the Strands session manager switch to it by endpoint."""
