//go:build gopve_testmodule

package gopvetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gopve/proxmox/modules-src/ansible"
)

type params struct {
	Name        string         `ansible:"name" json:"name"`
	Count       *int           `ansible:"count" json:"count"`
	Ratio       *float64       `ansible:"ratio" json:"ratio"`
	Flag        bool           `ansible:"flag" json:"flag"`
	Items       []string       `ansible:"items" json:"items"`
	Labels      map[string]any `ansible:"labels" json:"labels"`
	Mode        string         `ansible:"mode" json:"mode"`
	Secret      string         `ansible:"secret" json:"secret"`
	Path        string         `ansible:"path" json:"path"`
	Content     string         `ansible:"content" json:"content"`
	State       string         `ansible:"state" json:"state"`
	Panic       bool           `ansible:"panic" json:"panic"`
	Sleep       float64        `ansible:"sleep" json:"sleep"`
	PrintJunk   bool           `ansible:"print_junk" json:"print_junk"`
	BreakVerify bool           `ansible:"break_verify" json:"break_verify"`
}

// Module returns the gopve_test module definition.
func Module() ansible.Module {
	return ansible.Module{
		Name:             "gopve_test",
		ShortDescription: "Test module for the gopve runtime (not shipped)",
		Description: []string{
			"Exercises the gopve Go module runtime from real ansible-playbook runs: argument coercion, no_log masking, check and diff mode, panics, timeouts and stdout hygiene.",
			"Manages one text file at C(path) through observe, plan, apply and verify.",
		},
		Examples: `
- name: Manage a file and see the coerced arguments
  gopve.proxmox.gopve_test:
    name: demo
    count: "5"
    path: /tmp/gopve-demo.txt
    content: "hello\n"
  register: r
`,
		Return: `
facts:
  description: What the module saw.
  returned: always
  type: dict
  contains:
    euid:
      description: Effective user id of the module process.
      type: int
    platform:
      description: GOOS/GOARCH of the binary.
      type: str
    env_probe:
      description: Value of the environment variable GOPVE_TEST_ENV, or null.
      type: str
    echo:
      description: The decoded parameters, after coercion and masking.
      type: dict
`,
		Timeout: 60 * time.Second,
		Params:  params{},
		Spec: ansible.Spec{Options: map[string]ansible.Option{
			"name":   {Type: ansible.TypeStr, Required: true, Aliases: []string{"title"}, Description: []string{"A name, echoed back."}},
			"count":  {Type: ansible.TypeInt, Description: []string{"An integer, echoed back."}},
			"ratio":  {Type: ansible.TypeFloat, Description: []string{"A float, echoed back."}},
			"flag":   {Type: ansible.TypeBool, Default: false, Description: []string{"A boolean, echoed back."}},
			"items":  {Type: ansible.TypeList, Elements: ansible.TypeStr, Description: []string{"A list of strings, echoed back."}},
			"labels": {Type: ansible.TypeDict, Description: []string{"A dictionary, echoed back."}},
			"mode":   {Type: ansible.TypeStr, Choices: []any{"fast", "safe"}, Default: "fast", Description: []string{"A choice, echoed back."}},
			"secret": {Type: ansible.TypeStr, NoLog: true, EnvFallback: []string{"GOPVE_TEST_SECRET"},
				Description: []string{"A secret. The module puts it in its msg on purpose, so tests can prove it is masked."}},
			"path":    {Type: ansible.TypePath, Description: []string{"File to manage; nothing is managed when unset."}},
			"content": {Type: ansible.TypeStr, Default: "", Description: []string{"Content of C(path) when C(state=present)."}},
			"state":   {Type: ansible.TypeStr, Choices: []any{"present", "absent"}, Default: "present", Description: []string{"Whether C(path) should exist."}},
			"panic":   {Type: ansible.TypeBool, Default: false, Description: []string{"Panic inside the module."}},
			"sleep":   {Type: ansible.TypeFloat, Default: 0, Description: []string{"Seconds to sleep inside the module, honouring the deadline."}},
			"print_junk": {Type: ansible.TypeBool, Default: false,
				Description: []string{"Print junk on stdout from Go and from a child process, to prove the runtime keeps stdout clean."}},
			"break_verify": {Type: ansible.TypeBool, Default: false,
				Description: []string{"Write something other than C(content), so that verification fails."}},
		}},
		Run: run,
	}
}

func run(r *ansible.Run) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	if p.PrintJunk {
		fmt.Println("junk from fmt.Println on stdout")
		os.Stdout.WriteString("{\"junk\": \"a JSON-looking line on stdout\"}\n")
		child := exec.Command("/bin/sh", "-c", "echo junk from a child process")
		child.Stdout = os.Stdout // inherits fd 1, which the runtime pointed at stderr
		if err := child.Run(); err != nil {
			r.Warn("could not run the junk-printing child: " + err.Error())
		}
	}
	if p.Panic {
		panic("gopve_test was asked to panic")
	}
	if p.Sleep > 0 {
		r.Step(fmt.Sprintf("sleeping %gs as asked", p.Sleep))
		select {
		case <-time.After(time.Duration(p.Sleep * float64(time.Second))):
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	r.Log(1, "managing %q (state %s)", p.Path, p.State)
	if p.Path != "" {
		if err := r.Stage("file", func(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
			return planFile(p)
		}); err != nil {
			return err
		}
	}
	env, ok := os.LookupEnv("GOPVE_TEST_ENV")
	var probe any
	if ok {
		probe = env
	}
	r.Set("facts", map[string]any{
		"euid":      os.Geteuid(),
		"platform":  runtime.GOOS + "/" + runtime.GOARCH,
		"env_probe": probe,
		"echo":      p,
	})
	if p.Secret != "" {
		r.Set("msg", fmt.Sprintf("gopve_test ran for %s; secret is %s", p.Name, p.Secret))
	}
	return nil
}

// readFile observes the file: its content, or absent.
func readFile(path string) (content string, exists bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", path, err)
	}
	return string(data), true, nil
}

func planFile(p params) ([]ansible.Change, error) {
	cur, exists, err := readFile(p.Path)
	if err != nil {
		return nil, err
	}
	switch {
	case p.State == "absent" && exists:
		return []ansible.Change{{
			ID:      "file:" + p.Path,
			Summary: "remove " + p.Path,
			Diff:    ansible.TextDiff(p.Path, cur, ""),
			Apply:   func(context.Context) error { return os.Remove(p.Path) },
			Verify: func(context.Context) error {
				_, exists, err := readFile(p.Path)
				if err == nil && exists {
					err = fmt.Errorf("%s still exists", p.Path)
				}
				return err
			},
		}}, nil
	case p.State == "present" && (!exists || cur != p.Content):
		verb := "rewrite "
		if !exists {
			verb = "create "
		}
		write := p.Content
		if p.BreakVerify {
			write = p.Content + "sabotaged\n"
		}
		return []ansible.Change{{
			ID:      "file:" + p.Path,
			Summary: verb + p.Path,
			Diff:    ansible.TextDiff(p.Path, cur, p.Content),
			Apply:   func(context.Context) error { return renameio.WriteFile(p.Path, []byte(write), 0o644) },
			Verify: func(context.Context) error {
				got, exists, err := readFile(p.Path)
				switch {
				case err != nil:
					return err
				case !exists:
					return fmt.Errorf("%s does not exist", p.Path)
				case got != p.Content:
					return fmt.Errorf("%s holds %q, expected %q", p.Path, got, p.Content)
				}
				return nil
			},
		}}, nil
	}
	return nil, nil
}
