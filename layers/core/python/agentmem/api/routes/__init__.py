"""One Powertools Router per capability."""
