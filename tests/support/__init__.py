"""The tests' own kit: fixtures and helpers that tests in several folders use."""
