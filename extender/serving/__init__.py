"""Serving the extender verbs: the Flask app, the server, one module per verb, logs.

    app         the Flask application factory
    server      listeners, signals and shutdown: one process, an asyncio loop, a few threads
    connection  one client connection: deadlines, whole requests, the app on a thread
    admission   connection limits, per client and in all
    wsgi        calling the app with a request that has arrived whole
    tls         the serving certificate, reloaded when its files change
    verbs/      one module per verb
    logs        one JSON object per line
"""
