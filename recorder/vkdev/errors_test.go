package vkdev

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/vk"
)

// Every failure vk can report reaches the recorder as one of vkc's
// sentinels, keeping vk's message and chain; an error that is
// no vk failure passes unchanged.
func TestEveryVKFailureLowersOntoASentinel(t *testing.T) {
	seen := map[error]vk.Failure{}
	for _, f := range vk.Failures {
		cause := fmt.Errorf("vkSomething: %w", f)
		err := fromVK(cause)
		var to error
		for _, m := range sentinels {
			if m.failure == f {
				to = m.to
			}
		}
		if !assert.NotNil(t, to, "%v has no sentinel", f) {
			continue
		}
		assert.ErrorIs(t, err, to, "%v", f)
		assert.ErrorIs(t, err, f, "vk's failure stays in the chain")
		assert.Equal(t, to.Error()+": vkSomething: "+f.Error(), err.Error(), "the sentinel's message, then vk's")
		bare := fromVK(f)
		assert.Equal(t, to.Error(), bare.Error(), "vk's words for the failure are not said twice")
		detailed := fromVK(fmt.Errorf("%w: 16 bytes", f))
		assert.Equal(t, to.Error()+": 16 bytes", detailed.Error())
		if prev, dup := seen[to]; dup {
			t.Errorf("%v and %v both lower onto %v", prev, f, to)
		}
		seen[to] = f
	}
	assert.Len(t, sentinels, len(vk.Failures), "a row for a failure vk does not list")

	lost := &vk.Error{Call: "vkQueueSubmit", Result: vk.ErrorDeviceLostCode}
	assert.ErrorIs(t, fromVK(lost), errs.DeviceLost, "a VkResult that means a failure lowers like it")
	assert.Equal(t, errs.DeviceLost.Error()+": vkQueueSubmit: VK_ERROR_DEVICE_LOST", fromVK(lost).Error())
	var call *vk.Error
	if assert.ErrorAs(t, fromVK(fmt.Errorf("submitting: %w", lost)), &call, "the call and its VkResult stay reachable") {
		assert.Equal(t, "vkQueueSubmit", call.Call)
		assert.Equal(t, vk.ErrorDeviceLostCode, call.Result)
	}
	oom := &vk.Error{Call: "vkAllocateMemory", Result: vk.ErrorOutOfHostMemory}
	assert.ErrorIs(t, fromVK(oom), errs.OutOfMemory)

	other := errors.New("something else")
	assert.Same(t, other, fromVK(other))
	assert.NoError(t, fromVK(nil))
}
