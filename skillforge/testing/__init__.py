"""Test doubles shipped with the package: a scripted fake chat model and a tiny OpenAI-compatible
HTTP server. Users can test their own graphs and skills with them, offline."""
