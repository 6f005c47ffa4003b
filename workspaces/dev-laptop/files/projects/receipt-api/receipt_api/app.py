"""Flask application factory (not runnable here: dependencies are not installed on this laptop)."""

from flask import Flask, jsonify, request

from .totals import extract_total


def create_app() -> Flask:
    app = Flask(__name__)

    @app.post("/receipts")
    def upload():
        text = request.get_data(as_text=True)
        return jsonify({"total": extract_total(text)})

    @app.get("/health")
    def health():
        return {"ok": True}

    return app
