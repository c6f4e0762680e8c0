"""GDPR erasure of a user (a workflow of idempotent steps), its receipts, and the user's data export."""
