"""Run the API on one machine: an HTTP server that feeds the Lambda handler API Gateway events."""
