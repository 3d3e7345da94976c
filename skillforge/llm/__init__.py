"""The LLM layer: role settings (config), the client with cache, retries and budget (client, cache),
and the embedded local model (local_model, local_server). Every model call goes through `client.LLM`."""
