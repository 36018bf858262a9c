"""Bundle verbs: `keygen` (a signing key), `bundle` (runs into a signed tar), `verify`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeVar

from harness.errors import ConfigError, UntrustedKeyError
from harness.text import printable

P = TypeVar("P", bound=argparse.ArgumentParser)  # whichever parser class the CLI uses


def add_bundle_verbs(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness keygen --out PATH`, `harness bundle RUN… --key --out`, `harness verify BUNDLE`."""
    keygen = verbs.add_parser("keygen", help="make an Ed25519 key pair to sign bundles with")
    keygen.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="PATH",
        help="private key (PEM, mode 0600); the public key goes to PATH.pub; neither overwritten",
    )
    keygen.set_defaults(func=_keygen)

    bundle = verbs.add_parser(
        "bundle", help="finished runs into one signed tar with a manifest of sha256s"
    )
    bundle.add_argument(
        "sources",
        type=Path,
        nargs="+",
        metavar="RUN_OR_GROUP",
        help="run directories, trials groups or sweeps (whole directories)",
    )
    bundle.add_argument(
        "--key",
        type=Path,
        required=True,
        help="Ed25519 private key: `harness keygen`'s, or an unencrypted OpenSSH one",
    )
    bundle.add_argument(
        "--out", type=Path, required=True, metavar="NAME.tar", help="the bundle; never overwritten"
    )
    bundle.set_defaults(func=_bundle)

    verify = verbs.add_parser(
        "verify", help="check a bundle: signature, signer, files, then its files against each other"
    )
    verify.add_argument("bundle", type=Path, metavar="BUNDLE")
    add_trust_option(verify)
    verify.add_argument(
        "--trust-any",
        action="store_true",
        help="accept a valid signature by any key (its fingerprint is printed, not checked)",
    )
    verify.set_defaults(func=_verify)


def _keygen(args: argparse.Namespace) -> int:
    from harness.bundle.keys import fingerprint, public_path, write_new_key

    key = write_new_key(args.out)
    print(f"private key  {args.out} (keep it; mode 0600)")
    print(f"public key   {public_path(args.out)} (give it to those who verify your bundles)")
    print(f"fingerprint  {fingerprint(key.public_key())}")
    return 0


def _bundle(args: argparse.Namespace) -> int:
    import harness
    from harness.bundle.keys import fingerprint, load_private_key
    from harness.bundle.make import BundleRequest, make_bundle
    from harness.bundle.manifest import Provenance
    from harness.fingerprint.provenance import default_repo_dir
    from harness.gitstate import read_git_state

    key = load_private_key(args.key)
    git = read_git_state(default_repo_dir())
    made_by = Provenance(
        harness_version=harness.__version__, git_commit=git.commit, git_dirty=git.dirty
    )
    request = BundleRequest(sources=tuple(args.sources), key=key, out=args.out, made_by=made_by)
    bundled = make_bundle(request)
    for root, kind in sorted(bundled.roots.items()):
        print(f"  {root} ({kind})")
    print(f"{bundled.files} files, signed by {fingerprint(key.public_key())}")
    print(bundled.path)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from harness.bundle.summary import verdict_lines
    from harness.bundle.verify import verify_bundle

    if args.trust and args.trust_any:
        raise ConfigError("--trust-any: not with --trust (it would make --trust mean nothing)")
    verdict = verify_bundle(args.bundle, tuple(args.trust))
    if verdict.trusted_by is not None:
        signer = f"trusted ({verdict.trusted_by})"
    elif args.trust_any:
        signer = "NOT checked (--trust-any)"
    else:
        signer = "NOT trusted: no --trust key given"
    print(f"{args.bundle}: signature valid; {len(verdict.checks)} checks passed")
    print(f"  signer   {verdict.signer_fingerprint} (ed25519), {signer}")
    print(f"  files    {verdict.files} match their sha256 in MANIFEST.json")
    for line in verdict_lines(verdict):
        print(printable(line))
    for root in verdict.roots:
        print(printable(f"  bundled  {root}"))
    if verdict.trusted_by is None and not args.trust_any:
        raise UntrustedKeyError(
            f"{args.bundle}: signer {verdict.signer_fingerprint} was not checked against any "
            "trusted key; pass their public key with --trust PUBKEY (or --trust-any to accept "
            "any signer)"
        )
    return 0


def add_trust_option(parser: argparse.ArgumentParser) -> None:
    """`--trust PUBKEY`, repeatable: the bundle signers a verb accepts as trusted."""
    parser.add_argument(
        "--trust",
        type=Path,
        action="append",
        default=[],
        metavar="PUBKEY",
        help="a signer's public key (OpenSSH .pub or PEM) to accept; repeat for several",
    )
