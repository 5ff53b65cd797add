"""The console's link to the engine process: the handle the App uses (`handle`, `node_handle`),
the messages between the two processes (`protocol`), and the engine process itself (`server`,
with `publisher`, `outbox` and `views`)."""
