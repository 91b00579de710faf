"""The statistics service: an HTTP API and web pages over ``lakestats.api``.

``lakestats serve`` runs ``app.create_app`` under uvicorn. Every answer comes from the
facade (``LakestatsTable``); this package only names tables (``config``), keeps handles
fresh (``tables``), shapes JSON and errors (``jsonio``, ``errors``) and renders pages
(``pages``, ``views``, ``templates/``, ``static/``). Nothing here starts Spark.
"""

from lakestats import extras

extras.require("lakestats serve", "fastapi", "uvicorn", "jinja2", "fastapi_offline")
