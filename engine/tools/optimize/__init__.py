"""`hft-console optimize`: settings searched with Optuna, walk-forward over recordings."""
