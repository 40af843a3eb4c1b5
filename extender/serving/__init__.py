"""Serving the extender verbs: the Flask app, gunicorn, wire types, metrics and logs.

    app         the Flask application factory
    server      running the app under gunicorn
    wire        the kube-scheduler extender v1 wire types
    limits      how much one request may ask, and how much of it comes back
    verbs/      one module per verb
    metrics     Prometheus metrics, one registry per app
    logs        one JSON object per line
"""
