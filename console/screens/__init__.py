"""The console's modal screens: confirmations, the re-arm and risk override forms, help."""
