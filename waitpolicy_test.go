package vkc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// VKC_WAIT_POLICY is matched against each policy's name with spaces
// trimmed and case ignored; empty is WaitAuto; anything else is
// ErrWaitPolicy naming the value; WithWaitPolicy wins without reading the
// variable. The expected policy comes from the names (String), so the
// table is the rule, not a copy of the code's answers.
func TestWaitPolicyFromTheEnvironment(t *testing.T) {
	policies := []WaitPolicy{WaitAuto, WaitSpin, WaitYield, WaitBlock}
	spellings := func(name string) []string {
		return []string{name, strings.ToUpper(name), " " + name, name + "\t", "\n " + strings.ToUpper(name[:1]) + name[1:] + "  "}
	}
	for _, p := range policies {
		for _, v := range spellings(p.String()) {
			t.Setenv("VKC_WAIT_POLICY", v)
			got, err := (&config{}).waitPolicy()
			require.NoError(t, err, "VKC_WAIT_POLICY=%q", v)
			assert.Equal(t, p, got, "VKC_WAIT_POLICY=%q", v)
		}
	}
	for _, v := range []string{"", "  ", "\t"} {
		t.Setenv("VKC_WAIT_POLICY", v)
		got, err := (&config{}).waitPolicy()
		require.NoError(t, err)
		assert.Equal(t, WaitAuto, got, "VKC_WAIT_POLICY=%q", v)
	}
	for _, v := range []string{"busy", "sp in", "spin,yield", "0", "spinning", "blocks"} {
		t.Setenv("VKC_WAIT_POLICY", v)
		_, err := (&config{}).waitPolicy()
		assert.ErrorIs(t, err, ErrWaitPolicy, "VKC_WAIT_POLICY=%q", v)
		assert.ErrorContains(t, err, v)
		for _, p := range policies {
			c := &config{}
			WithWaitPolicy(p)(c)
			got, err := c.waitPolicy()
			require.NoError(t, err, "the option wins over VKC_WAIT_POLICY=%q", v)
			assert.Equal(t, p, got)
		}
	}
}
