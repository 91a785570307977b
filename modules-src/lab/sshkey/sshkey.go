// Package sshkey makes the lab's throwaway SSH keys (the client key Ansible
// uses, one host key per node) in the formats sshd and ssh read.
package sshkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// Pair is an ed25519 key in OpenSSH formats.
type Pair struct {
	PrivatePEM []byte        // "-----BEGIN OPENSSH PRIVATE KEY-----"
	Public     []byte        // authorized_keys line, without comment or newline
	Signer     ssh.Signer    // for Go SSH clients
	PublicKey  ssh.PublicKey // for host key checks
}

// New generates a key; comment goes into the private key file.
func New(comment string) (Pair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generating an ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return Pair{}, fmt.Errorf("encoding the private key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return Pair{}, fmt.Errorf("loading the private key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return Pair{}, fmt.Errorf("encoding the public key: %w", err)
	}
	line := ssh.MarshalAuthorizedKey(sshPub)
	return Pair{PrivatePEM: pem.EncodeToMemory(block), Public: line[:len(line)-1], Signer: signer, PublicKey: sshPub}, nil
}

// Parse reads a private key written by New.
func Parse(privatePEM []byte) (Pair, error) {
	signer, err := ssh.ParsePrivateKey(privatePEM)
	if err != nil {
		return Pair{}, fmt.Errorf("reading the lab key: %w", err)
	}
	line := ssh.MarshalAuthorizedKey(signer.PublicKey())
	return Pair{PrivatePEM: privatePEM, Public: line[:len(line)-1], Signer: signer, PublicKey: signer.PublicKey()}, nil
}
