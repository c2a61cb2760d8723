package vk

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vkcompute/vkc/devinfo"
)

// A program may declare only features the physical device offers: any
// subset of the offered set adopts, and anything beyond it is refused with
// ErrBadAdoption naming exactly the features (or unknown bits) missing.
// The physical device is a description here, since lavapipe offers every
// feature and a real one cannot be made to lack one.
func TestDeclaredFeaturesMustBeOffered(t *testing.T) {
	offered := devinfo.FeatureStorage16 | devinfo.FeatureInt16 | devinfo.FeatureFloat64
	for declared := Features(0); declared <= devinfo.AllFeatures; declared++ {
		err := checkDeclared(declared, offered, "made-up device")
		if declared&^offered == 0 {
			assert.NoError(t, err, "declared %s", declared)
			continue
		}
		assert.ErrorIs(t, err, ErrBadAdoption, "declared %s", declared)
		assert.ErrorContains(t, err, "made-up device")
		assert.ErrorContains(t, err, (declared &^ offered).String())
	}
	err := checkDeclared(devinfo.FeatureFloat16, offered, "made-up device")
	assert.ErrorContains(t, err, "shaderFloat16")
	assert.NotContains(t, err.Error(), "storageBuffer16BitAccess", "an offered feature is not named")
	err = checkDeclared(Features(1)<<20, devinfo.AllFeatures, "made-up device")
	assert.ErrorIs(t, err, ErrBadAdoption, "a bit no feature stands for")
	assert.ErrorContains(t, err, "Features(1<<20)")
}
