// The standard resource classes (os-resource-classes) and traits (os-traits) present from the start, like a
// Placement database after `placement-manage db sync`. Only CUSTOM_* names can be created or deleted.
export { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard-data.ts';

export const SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE';
