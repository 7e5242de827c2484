# One image for every kubesim component (apiserver, controller-manager, scheduler, kubelet_sim).
# It installs the project the way the Makefile does: a virtual environment in .venv, `pip install -e .`.
FROM python:3.11-slim

WORKDIR /app
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/app/.venv/bin:$PATH

COPY pyproject.toml README.md ./
COPY apiserver ./apiserver
COPY machinery ./machinery
COPY controller_manager ./controller_manager
COPY scheduler ./scheduler
COPY kubelet_sim ./kubelet_sim
COPY kubesim ./kubesim

RUN python3 -m venv .venv \
    && .venv/bin/python -m pip install --quiet --upgrade pip \
    && .venv/bin/python -m pip install --quiet -e .

# Components run as an unprivileged user; ports are chosen by docker-compose.yml.
RUN useradd --create-home --uid 10001 kubesim
USER kubesim

CMD ["python", "-m", "apiserver", "--help"]
