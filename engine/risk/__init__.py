"""The risk gateway: every order passes its checks before the executor sees it (pure logic)."""
